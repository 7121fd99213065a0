//! Exclude patterns: names matched anywhere, or globs anchored at the root.

use crate::error::SnapshotError;

/// Longest pattern accepted (patterns can come from API callers).
const MAX_PATTERN_LEN: usize = 1024;

#[derive(Debug)]
pub(crate) struct Excludes {
    /// Matched against each entry's name.
    names: Vec<Glob>,
    /// Matched against each entry's path from the root, by path segment.
    paths: Vec<Vec<Segment>>,
}

#[derive(Debug)]
enum Glob {
    Literal(Vec<u8>),
    Wild(Vec<Token>),
}

#[derive(Debug)]
enum Segment {
    /// `**`: any number of whole path segments.
    AnyDepth,
    Name(Glob),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Byte(u8),
    AnyOne,
    AnyRun,
    Class {
        negated: bool,
        ranges: Vec<(u8, u8)>,
    },
}

impl Excludes {
    pub(crate) fn new(patterns: &[String]) -> Result<Self, SnapshotError> {
        let mut excludes = Self {
            names: Vec::new(),
            paths: Vec::new(),
        };
        for pattern in patterns {
            let invalid = |reason| SnapshotError::InvalidExclude {
                pattern: pattern.clone(),
                reason,
            };
            if pattern.len() > MAX_PATTERN_LEN {
                return Err(invalid("longer than 1024 bytes"));
            }
            let trimmed = pattern.trim_end_matches('/');
            let anchored = trimmed.starts_with('/');
            let body = trimmed.trim_start_matches('/');
            if body.is_empty() {
                return Err(invalid("empty pattern"));
            }
            if !anchored && !body.contains('/') {
                excludes
                    .names
                    .push(Glob::parse(body.as_bytes()).map_err(invalid)?);
                continue;
            }
            let mut segments = Vec::new();
            for part in body.split('/').filter(|part| !part.is_empty()) {
                segments.push(if part == "**" {
                    Segment::AnyDepth
                } else {
                    Segment::Name(Glob::parse(part.as_bytes()).map_err(invalid)?)
                });
            }
            excludes.paths.push(segments);
        }
        Ok(excludes)
    }

    /// Whether the entry at `path` (from the root, `/`-separated), whose last
    /// segment is `name`, is excluded.
    pub(crate) fn matches(&self, path: &[u8], name: &[u8]) -> bool {
        if self.names.iter().any(|glob| glob.matches(name)) {
            return true;
        }
        if self.paths.is_empty() {
            return false;
        }
        let parts: Vec<&[u8]> = path.split(|b| *b == b'/').collect();
        self.paths
            .iter()
            .any(|segments| match_segments(segments, &parts))
    }
}

/// Whether `segments` match all of `parts`; memoised so that several `**`
/// cannot blow up (patterns may come from API callers).
fn match_segments(segments: &[Segment], parts: &[&[u8]]) -> bool {
    let width = parts.len() + 1;
    let mut memo: Vec<Option<bool>> = vec![None; (segments.len() + 1) * width];
    match_from(segments, parts, 0, 0, &mut memo, width)
}

fn match_from(
    segments: &[Segment],
    parts: &[&[u8]],
    s: usize,
    p: usize,
    memo: &mut Vec<Option<bool>>,
    width: usize,
) -> bool {
    if let Some(known) = memo[s * width + p] {
        return known;
    }
    let result = match segments.get(s) {
        None => p == parts.len(),
        Some(Segment::AnyDepth) => {
            (p..=parts.len()).any(|next| match_from(segments, parts, s + 1, next, memo, width))
        }
        Some(Segment::Name(glob)) => {
            p < parts.len()
                && glob.matches(parts[p])
                && match_from(segments, parts, s + 1, p + 1, memo, width)
        }
    };
    memo[s * width + p] = Some(result);
    result
}

impl Glob {
    fn parse(pattern: &[u8]) -> Result<Self, &'static str> {
        if !pattern
            .iter()
            .any(|b| matches!(b, b'*' | b'?' | b'[' | b'\\'))
        {
            return Ok(Self::Literal(pattern.to_vec()));
        }
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < pattern.len() {
            match pattern[i] {
                b'*' => {
                    // `**` inside a name means the same as `*`.
                    while pattern.get(i + 1) == Some(&b'*') {
                        i += 1;
                    }
                    tokens.push(Token::AnyRun);
                }
                b'?' => tokens.push(Token::AnyOne),
                b'\\' => {
                    i += 1;
                    let escaped = pattern.get(i).ok_or("trailing `\\`")?;
                    tokens.push(Token::Byte(*escaped));
                }
                b'[' => {
                    let (class, next) = parse_class(pattern, i + 1)?;
                    tokens.push(class);
                    i = next;
                    continue;
                }
                byte => tokens.push(Token::Byte(byte)),
            }
            i += 1;
        }
        Ok(Self::Wild(tokens))
    }

    fn matches(&self, name: &[u8]) -> bool {
        match self {
            Self::Literal(literal) => literal == name,
            Self::Wild(tokens) => match_tokens(tokens, name),
        }
    }
}

/// Parses a class starting after `[`; returns it and the index after `]`.
fn parse_class(pattern: &[u8], mut i: usize) -> Result<(Token, usize), &'static str> {
    let negated = matches!(pattern.get(i), Some(b'!' | b'^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let byte = *pattern.get(i).ok_or("unterminated `[`")?;
        if byte == b']' && !first {
            return Ok((Token::Class { negated, ranges }, i + 1));
        }
        first = false;
        if pattern.get(i + 1) == Some(&b'-') && pattern.get(i + 2).is_some_and(|b| *b != b']') {
            let high = pattern[i + 2];
            if high < byte {
                return Err("reversed range in `[...]`");
            }
            ranges.push((byte, high));
            i += 3;
        } else {
            ranges.push((byte, byte));
            i += 1;
        }
    }
}

/// Wildcard match with one backtrack point: linear in practice, O(n*m) at worst.
fn match_tokens(tokens: &[Token], name: &[u8]) -> bool {
    let (mut t, mut n) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while n < name.len() {
        let step = match tokens.get(t) {
            Some(Token::AnyRun) => {
                backtrack = Some((t, n));
                t += 1;
                continue;
            }
            Some(Token::AnyOne) => true,
            Some(Token::Byte(b)) => *b == name[n],
            Some(Token::Class { negated, ranges }) => {
                ranges
                    .iter()
                    .any(|(low, high)| (*low..=*high).contains(&name[n]))
                    != *negated
            }
            None => false,
        };
        if step {
            t += 1;
            n += 1;
        } else if let Some((star, at)) = backtrack {
            t = star + 1;
            n = at + 1;
            backtrack = Some((star, at + 1));
        } else {
            return false;
        }
    }
    tokens[t..].iter().all(|token| *token == Token::AnyRun)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn excludes(patterns: &[&str]) -> Excludes {
        let patterns: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
        Excludes::new(&patterns).unwrap()
    }

    fn excluded(ex: &Excludes, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap();
        ex.matches(path.as_bytes(), name.as_bytes())
    }

    #[test]
    fn bare_names_match_anywhere() {
        let ex = excludes(&["node_modules", "*.log", "cache?"]);
        assert!(excluded(&ex, "node_modules"));
        assert!(excluded(&ex, "web/app/node_modules"));
        assert!(excluded(&ex, "a/b/debug.log"));
        assert!(excluded(&ex, "cache1"));
        assert!(!excluded(&ex, "node_modules2"));
        assert!(!excluded(&ex, "a/log"));
        assert!(!excluded(&ex, "cache12"));
    }

    #[test]
    fn patterns_with_a_slash_are_anchored_at_the_root() {
        let ex = excludes(&["/build", "out/*.bin", "docs/**/*.pdf", "deep/**"]);
        assert!(excluded(&ex, "build"));
        assert!(!excluded(&ex, "src/build"));
        assert!(excluded(&ex, "out/a.bin"));
        assert!(!excluded(&ex, "out/sub/a.bin"));
        assert!(!excluded(&ex, "x/out/a.bin"));
        assert!(excluded(&ex, "docs/a.pdf"));
        assert!(excluded(&ex, "docs/x/y/a.pdf"));
        assert!(!excluded(&ex, "docs/x/y/a.txt"));
        assert!(excluded(&ex, "deep/x"));
    }

    #[test]
    fn classes_escapes_and_trailing_stars() {
        let ex = excludes(&["[a-c]x", "[!0-9]y", "lit\\*", "pre*"]);
        assert!(excluded(&ex, "bx"));
        assert!(!excluded(&ex, "dx"));
        assert!(excluded(&ex, "zy"));
        assert!(!excluded(&ex, "5y"));
        assert!(excluded(&ex, "lit*"));
        assert!(!excluded(&ex, "lits"));
        assert!(excluded(&ex, "pre"));
        assert!(excluded(&ex, "prefix"));
    }

    #[test]
    fn backtracking_stays_fast() {
        let ex = excludes(&["*a*a*a*a*a*a*a*a*b", "/**/**/**/**/**/**/z"]);
        let long = "a".repeat(4000);
        assert!(!excluded(&ex, &long));
        let deep = vec!["d"; 200].join("/");
        assert!(!excluded(&ex, &deep));
    }

    #[test]
    fn invalid_patterns_are_refused() {
        for bad in ["", "/", "[abc", "x\\", "[z-a]"] {
            assert!(
                Excludes::new(&[bad.to_owned()]).is_err(),
                "{bad:?} accepted"
            );
        }
    }
}
