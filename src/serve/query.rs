//! Query parameters of a request's URI.

use axum::http::Uri;

/// The value of query parameter `name` (percent-decoded), if given.
pub(crate) fn query_param(uri: &Uri, name: &str) -> Option<String> {
    uri.query()?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) => hex(h).zip(hex(l)).map(|(h, l)| (h * 16 + l) as u8),
            _ => None,
        };
        match (decoded, bytes[i]) {
            (Some(b), _) => {
                out.push(b);
                i += 3;
            }
            (None, b'+') => {
                out.push(b' ');
                i += 1;
            }
            (None, b) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_found_and_decoded() {
        let uri: Uri = "/?a=1&token=t%2Bk+n%zz&empty&team=d%C3%A9sk"
            .parse()
            .unwrap();
        assert_eq!(query_param(&uri, "token").as_deref(), Some("t+k n%zz"));
        assert_eq!(query_param(&uri, "team").as_deref(), Some("désk"));
        assert_eq!(query_param(&uri, "empty").as_deref(), Some(""));
        assert_eq!(query_param(&uri, "b"), None);
        assert_eq!(query_param(&"/x".parse().unwrap(), "a"), None);
        // A `%` at the very end is kept as it is.
        assert_eq!(
            query_param(&"/?t=a%".parse().unwrap(), "t").as_deref(),
            Some("a%")
        );
    }
}
