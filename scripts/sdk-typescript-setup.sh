#!/usr/bin/env bash
# The TypeScript SDK (sdk/typescript) built and packed as a user gets it, for
# its suite, which tests/tests/scenarios/sdk_typescript.rs runs with Node's
# built-in test runner against a live `paddock serve`:
#   1. npm ci (the devDependencies package-lock.json pins: openapi-typescript, typescript);
#   2. the generated types checked against sdk/openapi.json, the document both
#      SDKs are generated from (stale: fail, saying how to regenerate);
#   3. the build (tsc to dist/) and `npm pack` (the tarball, never published);
#   4. the tarball installed into a directory of its own, and the README's
#      example and a consumer (sdk/typescript/test/consumer.ts) type-checked
#      there against the installed package.
# The suite imports the SDK from that directory, so packing is tested too.
# Installs Debian's nodejs and npm when there is no npm (as
# scripts/console-setup.sh does); needs Node.js 18 or later. Safe to run
# again: each run installs the tarball it just packed, afresh.
# Progress goes to stderr; stdout is one line, the directory, for
# scripts/test.sh to export as PADDOCK_SDK_TYPESCRIPT:
#   PADDOCK_SDK_TYPESCRIPT=$(bash scripts/sdk-typescript-setup.sh)
# The directory is PADDOCK_SDK_TYPESCRIPT_DIR, default /var/lib/paddock/sdk-typescript.
set -euo pipefail
cd "$(dirname "$0")/.."
sdk=$PWD/sdk/typescript
dir=${PADDOCK_SDK_TYPESCRIPT_DIR:-/var/lib/paddock/sdk-typescript}
started=$(date +%s)

say() { echo "==> $*" >&2; }

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    say "installing nodejs and npm"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends nodejs npm >&2 || {
        apt-get update -qq >&2
        apt-get install -y -qq --no-install-recommends nodejs npm >&2
    }
fi
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)'; then
    echo "scripts/sdk-typescript-setup.sh: node $(node --version) is too old (the SDK needs >=18)" >&2
    exit 1
fi

say "npm ci (sdk/typescript)"
(cd "$sdk" && npm ci --no-audit --no-fund --loglevel=error >&2)

say "generated types match sdk/openapi.json"
(cd "$sdk" && node scripts/generate.mjs --check >&2)

say "build and pack"
(cd "$sdk" && node scripts/build.mjs >&2)
mkdir -p "$dir"
rm -f "$dir"/*.tgz
tarball=$(cd "$sdk" && npm pack --silent --ignore-scripts --pack-destination "$dir" 2>/dev/null | tail -1)
if [ ! -f "$dir/$tarball" ]; then
    echo "scripts/sdk-typescript-setup.sh: npm pack made no tarball in $dir" >&2
    exit 1
fi
say "packed $tarball: $(tar -tzf "$dir/$tarball" | wc -l) files"

say "installing $tarball into $dir"
rm -rf "$dir/node_modules" "$dir/package-lock.json"
cat >"$dir/package.json" <<JSON
{
  "name": "paddock-sdk-typescript-suite",
  "version": "0.0.0",
  "private": true,
  "description": "The packed @paddock/sdk, installed for sdk/typescript/test (scripts/sdk-typescript-setup.sh)",
  "type": "module",
  "dependencies": {
    "@paddock/sdk": "file:./$tarball"
  }
}
JSON
(cd "$dir" && npm install --no-audit --no-fund --offline --loglevel=error >&2)
node -e '
    const [dir, tarball] = process.argv.slice(1)
    const pkg = require(dir + "/node_modules/@paddock/sdk/package.json")
    if (!tarball.endsWith(`-${pkg.version}.tgz`)) { console.error(`installed ${pkg.version}, packed ${tarball}`); process.exit(1) }
' "$dir" "$tarball"

say "type-checking the README's example and a consumer against the installed package"
cp "$sdk/test/consumer.ts" "$dir/consumer.ts"
# the README's first ts block, as a module of its own (no @types/node here:
# `process` is declared)
node -e '
    const [readme, out] = process.argv.slice(1)
    const text = require("fs").readFileSync(readme, "utf8")
    const block = /```ts\n([\s\S]*?)```/.exec(text)
    if (!block) { console.error(`${readme} has no ts example`); process.exit(1) }
    const prelude = "declare const process: { env: Record<string, string | undefined> }\n"
    require("fs").writeFileSync(out, prelude + block[1])
' "$sdk/README.md" "$dir/readme.ts"
cat >"$dir/tsconfig.json" <<'JSON'
{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "lib": ["ES2022", "DOM", "DOM.Iterable"],
    "strict": true,
    "noEmit": true,
    "types": []
  },
  "files": ["consumer.ts", "readme.ts"]
}
JSON
node "$sdk/node_modules/typescript/bin/tsc" -p "$dir/tsconfig.json" >&2

say "TypeScript SDK ready in $(($(date +%s) - started)) s"
echo "$dir"
