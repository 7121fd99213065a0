#!/bin/sh
# The demo's tests: `sh test.sh` checks fizzbuzz.sh (POSIX sh and coreutils only).
cd "$(dirname "$0")" || exit 2
failed=0

lines() { # the number of lines of $1 (0 when empty)
    if [ -z "$1" ]; then echo 0; else printf '%s\n' "$1" | wc -l; fi
}

check() { # check N EXPECTED: fizzbuzz.sh N must print EXPECTED
    got=$(sh fizzbuzz.sh "$1" 2>&1)
    if [ "$got" = "$2" ]; then
        echo "ok   fizzbuzz.sh $1"
    else
        echo "FAIL fizzbuzz.sh $1"
        echo "     expected $(lines "$2") lines, the last one: $(printf '%s\n' "$2" | tail -n 1)"
        echo "     got      $(lines "$got") lines, the last one: $(printf '%s\n' "$got" | tail -n 1)"
        failed=$((failed + 1))
    fi
}

if [ ! -f fizzbuzz.sh ]; then
    echo "FAIL fizzbuzz.sh does not exist"
    exit 1
fi
check 1 "1"
check 5 "1
2
Fizz
4
Buzz"
check 15 "1
2
Fizz
4
Buzz
Fizz
7
8
Fizz
Buzz
11
Fizz
13
14
FizzBuzz"

if [ "$failed" -eq 0 ]; then
    echo "all 3 tests passed"
else
    echo "$failed of 3 tests failed"
    exit 1
fi
