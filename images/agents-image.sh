#!/usr/bin/env bash
# The agent CLIs Paddock sandboxes run, from npm, pinned by
# images/agents/package-lock.json: Claude Code (@anthropic-ai/claude-code),
# Codex (@openai/codex) and opencode (opencode-ai).
#   images/agents-image.sh [PREFIX]   (default /usr/local/lib/paddock-agents; as root)
# 1. `npm ci` into PREFIX (through a staging directory swapped in at the end),
#    skipped when PREFIX already holds exactly what the lockfile pins.
# 2. PREFIX/bin/{claude,codex,opencode}: relative symlinks to the native
#    binaries inside the per-platform packages. All three CLIs are native
#    executables (two Bun-compiled glibc ones, one static musl one), so
#    sandboxes exec them directly and need no node at run time; codex's npm
#    launcher (bin/codex.js) is a node script and is not used.
# 3. Platform packages this machine does not use are deleted (opencode installs
#    its -baseline copy next to the AVX2 one: 185 MB for nothing).
# 4. Each entry point runs `--version`, which must print the pinned version.
# 5. With a docker engine and the sandbox image (paddock-sandbox:bookworm, from
#    images/docker-image.sh): the image paddock-agents:bookworm, that image
#    plus PREFIX at the same path, for the docker and gvisor backends; kept
#    when its labels name this lockfile, this script and that base image.
# The native backend needs no image: its sandboxes see the host's /usr
# read-only, so the default PREFIX is visible in them as it is.
# Progress and timings go to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
recipe=images/agents
prefix=${1:-/usr/local/lib/paddock-agents}
prefix=${prefix%/}
base_image=${PADDOCK_DOCKER_IMAGE:-paddock-sandbox:bookworm}
agents_image=${PADDOCK_AGENTS_IMAGE:-paddock-agents:bookworm}
# Sandboxes run the binaries as an unprivileged uid: everything written here
# must be readable (and the binaries executable) by anyone.
umask 022

say() { echo "==> $*" >&2; }
die() {
    echo "images/agents-image.sh: $*" >&2
    exit 1
}
# Seconds since $1 (a `date +%s%N`), with tenths.
since() {
    local ms=$((($(date +%s%N) - $1) / 1000000))
    printf '%d.%d s' $((ms / 1000)) $((ms % 1000 / 100))
}
started=$(date +%s%N)

case $prefix in
/*) ;;
*) die "PREFIX must be an absolute path (the image holds it at the same path): $prefix" ;;
esac

# The agents, each as: entry point name, npm package (its version is what
# `--version` must print), and the candidate native binaries under
# node_modules, best first. The first is where the package's postinstall puts
# the binary (claude, opencode); the platform package's own copy is the
# fallback when that did not happen (e.g. npm ran with --ignore-scripts, which
# leaves a placeholder there).
agents=(claude codex opencode)
declare -A package=(
    [claude]=@anthropic-ai/claude-code
    [codex]=@openai/codex
    [opencode]=opencode-ai
)
declare -A candidates=(
    [claude]="@anthropic-ai/claude-code/bin/claude.exe @anthropic-ai/claude-code-linux-x64/claude"
    [codex]="@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
    [opencode]="opencode-ai/bin/opencode.exe opencode-linux-x64/bin/opencode opencode-linux-x64-baseline/bin/opencode"
)
# Each agent's platform packages (globs under node_modules), and where the
# binary is inside one: a platform package is kept only when the entry point's
# binary is (or is a copy of) its binary.
declare -A platforms=(
    [claude]="@anthropic-ai/claude-code-*"
    [codex]="@openai/codex-*"
    [opencode]="opencode-linux-* opencode-darwin-* opencode-windows-*"
)
declare -A platform_bin=(
    [claude]=claude
    [codex]="vendor/*/bin/codex"
    [opencode]=bin/opencode
)

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    # Only npm needs node, at install time; Debian's is enough for that
    # (Claude Code's engines field asks for node 22, a warning only).
    say "installing nodejs and npm"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends nodejs npm >&2 || {
        apt-get update -qq >&2
        apt-get install -y -qq --no-install-recommends nodejs npm >&2
    }
fi

is_elf() { [ -f "$1" ] && [ -x "$1" ] && [ "$(head -c 4 "$1")" = $'\x7fELF' ]; }
# The version the lockfile pins for an npm package.
pinned_version() {
    node -p 'require(process.argv[1]).packages["node_modules/" + process.argv[2]].version' \
        "$PWD/$recipe/package-lock.json" "$1"
}

# Whether DIR holds exactly what the lockfile pins: its copies of package.json
# and package-lock.json are the recipe's, every package in node_modules that
# the lockfile names has the pinned version (the three CLIs must be there),
# and the entry points lead to native executables.
pinned() {
    local dir=$1 name
    cmp -s "$recipe/package.json" "$dir/package.json" &&
        cmp -s "$recipe/package-lock.json" "$dir/package-lock.json" &&
        (cd "$dir" && node -e '
            const fs = require("fs");
            const lock = require("./package-lock.json");
            const version = (key) => {
                try { return JSON.parse(fs.readFileSync(key + "/package.json", "utf8")).version; }
                catch { return undefined; }
            };
            for (const name of Object.keys(lock.packages[""].dependencies))
                if (version("node_modules/" + name) === undefined) process.exit(1);
            for (const [key, entry] of Object.entries(lock.packages)) {
                const have = key === "" ? undefined : version(key);
                if (have !== undefined && have !== entry.version) process.exit(1);
            }
        ') >/dev/null 2>&1 || return 1
    for name in "${agents[@]}"; do
        is_elf "$dir/bin/$name" || return 1
    done
}

# Points DIR/bin/NAME at the first candidate that is a native executable.
link_entry_point() {
    local dir=$1 name=$2 rel
    for rel in ${candidates[$name]}; do
        if is_elf "$dir/node_modules/$rel"; then
            ln -sfn "../node_modules/$rel" "$dir/bin/$name"
            say "$name -> node_modules/$rel"
            return 0
        fi
        say "warning: $name: node_modules/$rel is missing or not a native executable" \
            "(a postinstall that did not run leaves a placeholder); trying the next candidate"
    done
    die "$name: no native binary in $dir/node_modules (looked for: ${candidates[$name]})"
}

# Deletes NAME's platform packages but the one its entry point uses: the one
# holding the binary, or whose binary is the same file (the postinstalls
# hardlink it), else the first whose binary is an identical copy (opencode
# 1.18.33's -baseline binary is byte-identical to the plain one, so content
# alone cannot tell which one its postinstall chose).
prune_platforms() {
    local dir=$1 name=$2 target pkg bin pattern keep='' same=''
    local pkgs=()
    target=$(readlink -f "$dir/bin/$name")
    for pattern in ${platforms[$name]}; do
        for pkg in "$dir"/node_modules/$pattern; do
            [ -d "$pkg" ] && pkgs+=("$(readlink -f "$pkg")")
        done
    done
    for pkg in "${pkgs[@]}"; do
        case $target in "$pkg"/*) keep=$pkg ;; esac
        # shellcheck disable=SC2086 # platform_bin may be a glob
        for bin in "$pkg"/${platform_bin[$name]}; do
            [ -f "$bin" ] || continue
            if [ "$target" -ef "$bin" ]; then
                keep=$pkg
            elif [ -z "$same" ] && [ "$(stat -c %s "$target")" = "$(stat -c %s "$bin")" ] &&
                cmp -s "$target" "$bin"; then
                same=$pkg
            fi
        done
        [ -n "$keep" ] && break
    done
    keep=${keep:-$same}
    for pkg in "${pkgs[@]}"; do
        [ "$pkg" = "$keep" ] && continue
        say "removing ${pkg#"$dir"/} ($(du -sh "$pkg" | cut -f1), not used here)"
        rm -rf "$pkg"
    done
}

# --- 1-3: the install -------------------------------------------------------
if pinned "$prefix"; then
    say "agent CLIs already installed as pinned in $prefix"
else
    t=$(date +%s%N)
    say "installing the pinned agent CLIs into $prefix (npm ci)"
    # A staging directory beside PREFIX, swapped in when complete: a failed or
    # interrupted install never leaves a half-filled PREFIX that sandboxes see.
    mkdir -p "$(dirname "$prefix")"
    stage=$(mktemp -d "$prefix.new.XXXXXX")
    trap 'rm -rf "$stage"' EXIT
    chmod 0755 "$stage"
    cp "$recipe/package.json" "$recipe/package-lock.json" "$stage/"
    # npm 11 warns that the postinstalls are "not yet covered by allowScripts"
    # but runs them; they only copy or hardlink a binary from a platform
    # package (nothing is downloaded from outside npm).
    (cd "$stage" && npm ci --no-audit --no-fund --loglevel=error >&2)
    say "npm ci: $(since "$t")"

    t=$(date +%s%N)
    mkdir -p "$stage/bin"
    for name in "${agents[@]}"; do
        link_entry_point "$stage" "$name"
    done
    for name in "${agents[@]}"; do
        prune_platforms "$stage" "$name"
    done
    pinned "$stage" || die "$stage does not hold what $recipe/package-lock.json pins after npm ci"
    if [ -e "$prefix" ]; then
        old=$(mktemp -d "$prefix.old.XXXXXX")
        mv "$prefix" "$old/"
        mv "$stage" "$prefix"
        rm -rf "$old"
    else
        mv "$stage" "$prefix"
    fi
    trap - EXIT
    say "entry points and pruning: $(since "$t")"
fi
say "$prefix: $(du -sh "$prefix" | cut -f1)"

# --- 4: the entry points run -------------------------------------------------
# With an empty HOME: --version must not need (or write to) the caller's.
t=$(date +%s%N)
home=$(mktemp -d /tmp/paddock-agents-home.XXXXXX)
for name in "${agents[@]}"; do
    want=$(pinned_version "${package[$name]}")
    out=$(HOME=$home timeout 60 "$prefix/bin/$name" --version </dev/null 2>&1) ||
        die "$prefix/bin/$name --version failed: $out"
    # Only the line with the version (codex warns that it will not write
    # helper links into a HOME under /tmp).
    case $out in
    *"$want"*) say "$prefix/bin/$name: $(grep -F -m1 "$want" <<<"$out")" ;;
    *) die "$prefix/bin/$name --version printed '$out', not the pinned $want" ;;
    esac
done
rm -rf "$home"
say "--version of each: $(since "$t")"

# --- 5: the docker/gvisor image ---------------------------------------------
if ! docker info >/dev/null 2>&1; then
    say "no docker engine here: $agents_image not built"
elif ! docker image inspect "$base_image" >/dev/null 2>&1; then
    say "no $base_image image (images/docker-image.sh makes it): $agents_image not built"
else
    # What the image is made from: the lockfile, this recipe, the base image
    # (its id changes when images/docker-image.sh runs again) and PREFIX.
    lock_sha=$(sha256sum "$recipe/package-lock.json" | cut -d' ' -f1)
    recipe_sha=$(sha256sum images/agents-image.sh | cut -d' ' -f1)
    base_id=$(docker image inspect -f '{{.Id}}' "$base_image")
    want_labels="$lock_sha $recipe_sha $base_id $prefix"
    have_labels=$(docker image inspect -f \
        '{{index .Config.Labels "org.paddock.agents.lock-sha256"}} {{index .Config.Labels "org.paddock.agents.recipe-sha256"}} {{index .Config.Labels "org.paddock.agents.base"}} {{index .Config.Labels "org.paddock.agents.prefix"}}' \
        "$agents_image" 2>/dev/null || true)
    if [ "$have_labels" = "$want_labels" ]; then
        say "$agents_image is up to date (lockfile sha256 $lock_sha)"
    else
        t=$(date +%s%N)
        old_id=$(docker image inspect -f '{{.Id}}' "$agents_image" 2>/dev/null || true)
        say "building $agents_image from $base_image (lockfile sha256 $lock_sha)"
        # The build context is PREFIX itself (nothing copied first); the
        # Dockerfile is generated in a temporary directory, which docker sends
        # along. FROM a local image: nothing is pulled. The legacy builder
        # (dockerd 20.10 here, and no buildx plugin) keeps hardlinks in COPY.
        ctx=$(mktemp -d /tmp/paddock-agents-image.XXXXXX)
        trap 'rm -rf "$ctx"' EXIT
        cat >"$ctx/Dockerfile" <<EOF
FROM $base_image
COPY . $prefix/
LABEL org.paddock.image=agents \\
      org.paddock.agents.lock-sha256=$lock_sha \\
      org.paddock.agents.recipe-sha256=$recipe_sha \\
      org.paddock.agents.base=$base_id \\
      org.paddock.agents.prefix=$prefix
EOF
        DOCKER_BUILDKIT=0 docker build --pull=false --quiet -t "$agents_image" \
            -f "$ctx/Dockerfile" "$prefix" >&2
        rm -rf "$ctx"
        trap - EXIT
        # The image it replaces (1 GB), unless a container still uses it.
        new_id=$(docker image inspect -f '{{.Id}}' "$agents_image")
        if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
            docker image rm "$old_id" >/dev/null 2>&1 || true
        fi
        say "docker build: $(since "$t")"
    fi
    say "$agents_image: $(docker image inspect -f '{{.Size}}' "$agents_image" |
        awk '{ printf "%.0f MB", $1 / 1e6 }')"

    # The entry points in the image, under runc and, when registered, gVisor
    # (no network: --version needs none).
    runtimes=(runc)
    if docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then
        runtimes+=(runsc)
    fi
    for runtime in "${runtimes[@]}"; do
        t=$(date +%s%N)
        for name in "${agents[@]}"; do
            want=$(pinned_version "${package[$name]}")
            out=$(timeout 120 docker run --rm --runtime="$runtime" --network=none \
                "$agents_image" "$prefix/bin/$name" --version </dev/null 2>&1) ||
                die "in $agents_image ($runtime): $prefix/bin/$name --version failed: $out"
            case $out in
            *"$want"*) say "$agents_image ($runtime): $name: $(grep -F -m1 "$want" <<<"$out")" ;;
            *) die "in $agents_image ($runtime): $name --version printed '$out', not $want" ;;
            esac
        done
        say "--version in $agents_image under $runtime: $(since "$t")"
    done
fi
say "agent CLIs ready in $(since "$started")"
