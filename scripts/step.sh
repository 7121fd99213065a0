# Sourced by scripts/test.sh and scripts/check.sh: `step TEXT` prints the
# "==> TEXT" heading of a step with the seconds since the test command
# started, so a CI log shows where its wall time went.
PADDOCK_STEPS_START=${PADDOCK_STEPS_START:-$(date +%s)}
export PADDOCK_STEPS_START
step() {
    echo "==> $* [at $(($(date +%s) - PADDOCK_STEPS_START)) s]"
}
