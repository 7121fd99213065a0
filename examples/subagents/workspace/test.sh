#!/bin/sh
# bin/hello.sh must greet whoever it is given.
out=$(sh bin/hello.sh paddock 2>&1)
if [ "$out" = "hello, paddock" ]; then
    echo "PASS"
else
    echo "FAIL: sh bin/hello.sh paddock printed '$out', not 'hello, paddock'"
    exit 1
fi
