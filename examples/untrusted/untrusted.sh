#!/bin/sh
# A stand-in for code an agent downloaded and should not trust.
echo "== who am I inside the sandbox"
id
echo "== what I can see of the filesystem"
ls /
echo "== my network"
cat /proc/net/dev | tail -n +3 | cut -d: -f1
echo "== trying to read the host's secrets"
cat /etc/shadow 2>&1 | head -1
echo "== trying to write outside the workspace"
touch /usr/pwned 2>&1
echo "== doing my real job: writing into the workspace"
date > /workspace/ran-at.txt && echo "wrote /workspace/ran-at.txt"
