//! `paddock run` where a checkpoint is no undo: the home directory, `/`, or
//! a workspace that cannot be checkpointed. The agent would write there
//! with nothing to go back to, so the run asks first on a terminal, and
//! without one it is refused unless --yes says to go on.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

/// Why a run in `dir` would have no undo worth the name, if it would: it is
/// `/` or the home directory `home`. (Both are compared canonical.)
pub fn risky_dir(dir: &Path, home: Option<&Path>) -> Option<&'static str> {
    if dir == Path::new("/") {
        return Some("the root directory");
    }
    if home.is_some_and(|home| home == dir) {
        return Some("your home directory");
    }
    None
}

/// What says no: the refusal printed after a question answered no (or
/// asked where nobody can answer).
pub const REFUSED: &str = "not run; pass --yes to run there anyway";

/// Whether to go on after `question`: yes with `yes`; else the answer typed
/// on a terminal; without one, no. A no is printed with [`REFUSED`].
pub fn confirm(question: &str, yes: bool) -> bool {
    if yes {
        return true;
    }
    let stdin = std::io::stdin();
    let go = if stdin.is_terminal() && std::io::stderr().is_terminal() {
        eprint!("paddock: {question}. Go on? [y/N] ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        stdin.lock().read_line(&mut answer).is_ok() && is_yes(&answer)
    } else {
        eprintln!("paddock: {question}");
        false
    };
    if !go {
        eprintln!("paddock: {REFUSED}");
    }
    go
}

fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_and_the_home_directory_are_risky() {
        let home = Path::new("/home/ann");
        assert_eq!(
            risky_dir(Path::new("/"), Some(home)),
            Some("the root directory")
        );
        assert_eq!(risky_dir(home, Some(home)), Some("your home directory"));
        assert_eq!(risky_dir(Path::new("/home/ann/project"), Some(home)), None);
        assert_eq!(risky_dir(Path::new("/home"), Some(home)), None);
        assert_eq!(risky_dir(home, None), None);
    }

    #[test]
    fn only_a_yes_goes_on() {
        assert!(is_yes("y\n"));
        assert!(is_yes(" YES "));
        assert!(!is_yes("\n"));
        assert!(!is_yes("no"));
        assert!(!is_yes("yep"));
    }
}
