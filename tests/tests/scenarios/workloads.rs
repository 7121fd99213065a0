//! Real programs under the seccomp allowlist: a shell pipeline, python3
//! (subprocess, multiprocessing, sockets, getaddrinfo), git, gcc, tar with
//! zstd, find/grep, and node when the host has it. A system call one of them
//! needs and the allowlist lacks fails here (EPERM), not in a user's sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;

const SCRIPT: &str = r#"set -e
cd /workspace
seq 1 100 | sort -rn | head -3 | tr '\n' ',' ; echo
python3 -c "
import subprocess, multiprocessing, socket, sqlite3, threading, tempfile
print(subprocess.run(['echo', 'py-child'], capture_output=True, text=True).stdout.strip())
with multiprocessing.Pool(2) as p: print('pool', p.map(abs, [-1, -2]))
print('gai', socket.getaddrinfo('localhost', 80)[0][0].name)
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); print('listen ok')
"
git init -q repo && cd repo
git -c user.email=t@t -c user.name=t commit -q --allow-empty -m one
echo hi > f && git add f && git -c user.email=t@t -c user.name=t commit -q -m two
git log --oneline | wc -l | sed 's/^/commits /'
cd ..
printf '#include <stdio.h>\nint main(void){puts("gcc-hello");return 0;}\n' > h.c
gcc -o h h.c && ./h
mkdir -p d/e && echo x > d/e/y && tar --zstd -cf a.tar.zst d && tar --zstd -tf a.tar.zst | grep -c y | sed 's/^/tar /'
find . -name '*.c' | grep -q h.c && echo find-grep ok
if command -v node >/dev/null; then
  node -e 'console.log(require("child_process").execSync("echo node-child").toString().trim())'
else
  echo "node-child (skipped: no node on this host)"
fi
echo all-done
"#;

#[test]
fn common_tools_run_under_the_allowlist() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    let run = SandboxRun::shell(SCRIPT)
        .workspace(ws.path())
        .deadline(Duration::from_secs(240))
        .run();
    let out = run.stdout_str();
    assert_eq!(
        run.code(),
        0,
        "stdout:\n{out}\nstderr:\n{}",
        run.stderr_str()
    );
    for expected in [
        "100,99,98,",
        "py-child",
        "pool [1, 2]",
        "gai AF_INET",
        "listen ok",
        "commits 2",
        "gcc-hello",
        "tar 1",
        "find-grep ok",
        "node-child",
        "all-done",
    ] {
        assert!(out.contains(expected), "no {expected:?} in:\n{out}");
    }
    if out.contains("node-child (skipped") {
        eprintln!("workloads: node part skipped: no node on this host");
    }
}
