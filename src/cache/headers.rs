//! Response (or request) headers as the cache logic reads them: names lowercased,
//! order and repeats kept. Plain data, no parsing beyond joining list fields.

/// Response (or request) headers: names lowercased, in order, repeats kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Headers(pub Vec<(String, String)>);

impl Headers {
    /// Builds from name/value pairs, lowercasing the names.
    pub fn from_pairs<N: AsRef<str>, V: AsRef<str>>(pairs: &[(N, V)]) -> Headers {
        Headers(
            pairs
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_ref().to_ascii_lowercase(),
                        v.as_ref().trim().to_string(),
                    )
                })
                .collect(),
        )
    }

    /// All values of a header, joined with ", " as RFC 9110 allows for list fields
    /// (`None` when absent). Do not use for Set-Cookie.
    pub fn get(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = self.get_all(name).collect();
        (!values.is_empty()).then(|| values.join(", "))
    }

    /// Each value of a header, in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the header is present.
    pub fn has(&self, name: &str) -> bool {
        self.get_all(name).next().is_some()
    }
}
