//! Shell-style name globs: `*`, `?`, `[abc]`, `[a-z]`, `[!x]` and `\` escapes,
//! matched against one path component.

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    AnyChar,
    AnyRun,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

#[derive(Debug, Clone)]
pub struct Glob {
    tokens: Vec<Token>,
}

impl Glob {
    /// Never fails: an unclosed `[` is taken literally.
    pub fn new(pattern: &str) -> Self {
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '*' => tokens.push(Token::AnyRun),
                '?' => tokens.push(Token::AnyChar),
                '\\' if i + 1 < chars.len() => {
                    i += 1;
                    tokens.push(Token::Literal(chars[i]));
                }
                '[' => match parse_class(&chars[i + 1..]) {
                    Some((token, used)) => {
                        tokens.push(token);
                        i += used;
                    }
                    None => tokens.push(Token::Literal('[')),
                },
                c => tokens.push(Token::Literal(c)),
            }
            i += 1;
        }
        Self { tokens }
    }

    pub fn matches(&self, name: &str) -> bool {
        let text: Vec<char> = name.chars().collect();
        // Classic wildcard matching: remember the last `*` and retry from it.
        let (mut t, mut s) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while s < text.len() {
            match self.tokens.get(t) {
                Some(Token::AnyRun) => {
                    star = Some((t, s));
                    t += 1;
                }
                Some(token) if single_matches(token, text[s]) => {
                    t += 1;
                    s += 1;
                }
                _ => match star {
                    Some((star_t, star_s)) => {
                        t = star_t + 1;
                        s = star_s + 1;
                        star = Some((star_t, star_s + 1));
                    }
                    None => return false,
                },
            }
        }
        self.tokens[t..].iter().all(|token| *token == Token::AnyRun)
    }
}

fn single_matches(token: &Token, c: char) -> bool {
    match token {
        Token::Literal(l) => *l == c,
        Token::AnyChar => true,
        Token::AnyRun => false,
        Token::Class { negated, ranges } => {
            ranges.iter().any(|(lo, hi)| *lo <= c && c <= *hi) != *negated
        }
    }
}

/// Parses the inside of `[...]`; returns the token and how many chars it used
/// including the closing `]`.
fn parse_class(chars: &[char]) -> Option<(Token, usize)> {
    let mut i = 0;
    let negated = matches!(chars.first(), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    while i < chars.len() {
        let c = chars[i];
        if c == ']' && !first {
            return Some((Token::Class { negated, ranges }, i + 1));
        }
        first = false;
        if i + 2 < chars.len() && chars[i + 1] == '-' && chars[i + 2] != ']' {
            ranges.push((c, chars[i + 2]));
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, name: &str) -> bool {
        Glob::new(pattern).matches(name)
    }

    #[test]
    fn wildcards() {
        assert!(m("*.rs", "main.rs"));
        assert!(!m("*.rs", "main.rsx"));
        assert!(m("*", ""));
        assert!(m("a*b*c", "axxbyyc"));
        assert!(!m("a*b*c", "axxbyy"));
        assert!(m("?.txt", "a.txt"));
        assert!(!m("?.txt", "ab.txt"));
        assert!(m("exact", "exact"));
    }

    #[test]
    fn classes_and_escapes() {
        assert!(m("[ab]x", "bx"));
        assert!(!m("[ab]x", "cx"));
        assert!(m("[a-c]1", "b1"));
        assert!(m("[!a-c]1", "d1"));
        assert!(!m("[!a-c]1", "a1"));
        assert!(m("[]]", "]"));
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "a"));
        assert!(m("[abc", "[abc"));
    }
}
