//! The one way an error is printed with its causes, on both sides of the
//! protocol (host and guest) and in the jail.

use std::error::Error;
use std::fmt;

/// An error and its sources joined with ": ", on one line. A cause whose text
/// the line already ends with (an error that prints its source itself) is not
/// repeated.
pub fn error_chain(error: &dyn Error) -> String {
    ErrorChain(error).to_string()
}

/// [`error_chain`] as a `Display` value, for log fields and `format!`
/// without building the string first.
#[derive(Debug, Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a dyn Error);

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = self.0.to_string();
        let mut source = self.0.source();
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !text.ends_with(&cause_text) {
                text.push_str(": ");
                text.push_str(&cause_text);
            }
            source = cause.source();
        }
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("middle")]
    struct Middle(#[source] Outer);

    #[derive(Debug, thiserror::Error)]
    #[error("opening the file: {0}")]
    struct Repeats(#[source] std::io::Error);

    #[test]
    fn sources_are_joined() {
        let err = Outer(std::io::Error::other("inner"));
        assert_eq!(error_chain(&err), "outer: inner");
        let err = Middle(Outer(std::io::Error::other("inner")));
        assert_eq!(error_chain(&err), "middle: outer: inner");
        assert_eq!(format!("[{}]", ErrorChain(&err)), "[middle: outer: inner]");
    }

    #[test]
    fn a_source_the_message_already_ends_with_is_not_repeated() {
        let err = Repeats(std::io::Error::other("denied"));
        assert_eq!(error_chain(&err), "opening the file: denied");
    }
}
