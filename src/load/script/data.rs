//! Data feeders (`data = "users.csv"`, as Gatling's feeders and k6's
//! SharedArray): a CSV file with a header row (RFC 4180: quoted fields, doubled
//! quotes, CRLF or LF) or a JSON array of flat objects; each VU takes one row, in
//! turn (VU n gets row n, wrapping) or at random, and its columns are variables.
//! Bounded: [`MAX_DATA_FILE`] bytes, [`MAX_ROWS`] rows, [`MAX_COLUMNS`] columns.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The largest data file read: 16 MiB.
pub const MAX_DATA_FILE: u64 = 16 << 20;
/// The most rows kept.
pub const MAX_ROWS: usize = 1_000_000;
/// The most columns.
pub const MAX_COLUMNS: usize = 64;

/// Rows of data for the VUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feeder {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Rows at random instead of in turn.
    pub random: bool,
}

impl Feeder {
    /// The row of VU `vu` (run-wide index).
    pub fn row(&self, vu: u64) -> &[String] {
        let n = self.rows.len() as u64;
        let i = if self.random {
            SmallRng::seed_from_u64(vu ^ 0xda7a).random_range(0..n)
        } else {
            vu % n
        };
        &self.rows[i as usize]
    }
}

/// A bad data file: the 1-based line (when known) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError {
    pub line: Option<usize>,
    pub message: String,
}

fn err(line: Option<usize>, message: impl Into<String>) -> DataError {
    DataError {
        line,
        message: message.into(),
    }
}

/// Parses a data file's text: JSON when it starts with `[`, else CSV.
pub fn parse(text: &str, random: bool) -> Result<Feeder, DataError> {
    let (columns, rows) = if text.trim_start().starts_with('[') {
        parse_json(text)?
    } else {
        parse_csv(text)?
    };
    if rows.is_empty() {
        return Err(err(None, "no rows (a header and at least one row)"));
    }
    Ok(Feeder {
        columns,
        rows,
        random,
    })
}

type Table = (Vec<String>, Vec<Vec<String>>);

fn check_columns(columns: &[String], line: Option<usize>) -> Result<(), DataError> {
    if columns.len() > MAX_COLUMNS {
        return Err(err(line, format!("more than {MAX_COLUMNS} columns")));
    }
    for (i, c) in columns.iter().enumerate() {
        if c.is_empty()
            || !c
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
        {
            return Err(err(
                line,
                format!("column '{c}' is not a variable name (letters, digits, _ - .)"),
            ));
        }
        if columns[..i].contains(c) {
            return Err(err(line, format!("column '{c}' is there twice")));
        }
    }
    Ok(())
}

/// RFC 4180 records: fields separated by commas, quoted fields may hold commas,
/// line breaks and doubled quotes. Returns each record with its first line.
fn records(text: &str) -> Result<Vec<(usize, Vec<String>)>, DataError> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut chars = text.chars().peekable();
    while chars.peek().is_some() {
        let start = line;
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        let mut was_quoted = false;
        loop {
            let Some(c) = chars.next() else {
                if quoted {
                    return Err(err(Some(start), "a quoted field is not closed"));
                }
                break;
            };
            match (quoted, c) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                (true, '"') => quoted = false,
                (true, c) => {
                    if c == '\n' {
                        line += 1;
                    }
                    field.push(c);
                }
                (false, '"') if field.is_empty() && !was_quoted => {
                    quoted = true;
                    was_quoted = true;
                }
                (false, ',') => {
                    fields.push(std::mem::take(&mut field));
                    was_quoted = false;
                }
                (false, '\r') if chars.peek() == Some(&'\n') => {}
                (false, '\n') => {
                    line += 1;
                    break;
                }
                (false, c) => field.push(c),
            }
        }
        fields.push(field);
        if fields.len() == 1 && fields[0].is_empty() {
            continue;
        }
        if out.len() > MAX_ROWS {
            return Err(err(Some(start), format!("more than {MAX_ROWS} rows")));
        }
        out.push((start, fields));
    }
    Ok(out)
}

fn parse_csv(text: &str) -> Result<Table, DataError> {
    let mut recs = records(text)?.into_iter();
    let Some((hline, header)) = recs.next() else {
        return Err(err(None, "empty: a header row and at least one row"));
    };
    let columns: Vec<String> = header.iter().map(|c| c.trim().to_string()).collect();
    check_columns(&columns, Some(hline))?;
    let mut rows = Vec::new();
    for (line, r) in recs {
        if r.len() != columns.len() {
            return Err(err(
                Some(line),
                format!("{} fields, the header has {}", r.len(), columns.len()),
            ));
        }
        rows.push(r);
    }
    Ok((columns, rows))
}

fn parse_json(text: &str) -> Result<Table, DataError> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| err(Some(e.line()), e.to_string()))?;
    let arr = v
        .as_array()
        .ok_or_else(|| err(None, "expected an array of objects"))?;
    if arr.len() > MAX_ROWS {
        return Err(err(None, format!("more than {MAX_ROWS} rows")));
    }
    let mut columns: Vec<String> = Vec::new();
    for o in arr {
        let o = o
            .as_object()
            .ok_or_else(|| err(None, "every element must be an object"))?;
        for k in o.keys() {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
        if columns.len() > MAX_COLUMNS {
            break;
        }
    }
    check_columns(&columns, None)?;
    let rows = arr
        .iter()
        .map(|o| {
            columns
                .iter()
                .map(|c| o.get(c).map(super::json::text).unwrap_or_default())
                .collect()
        })
        .collect();
    Ok((columns, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_with_quotes() {
        let f = parse(
            "user,password,note\r\nkim,pw1,plain\n\"lee\",\"p,w\",\"say \"\"hi\"\"\nthere\"\n\n",
            false,
        )
        .unwrap();
        assert_eq!(f.columns, ["user", "password", "note"]);
        assert_eq!(f.rows.len(), 2);
        assert_eq!(f.rows[1], ["lee", "p,w", "say \"hi\"\nthere"]);
        assert_eq!(f.row(0)[0], "kim");
        assert_eq!(f.row(3)[0], "lee");
        let e = parse("a,b\n1,2\n3\n", false).unwrap_err();
        assert_eq!(e.line, Some(3), "{e:?}");
        assert!(parse("a,a\n1,2\n", false).is_err());
        assert!(parse("a b\n1\n", false).is_err());
        assert!(parse("a\n", false).is_err());
        assert_eq!(parse("a\n\"x\n", false).unwrap_err().line, Some(2));
    }

    #[test]
    fn json_rows_and_random_order() {
        let f = parse(r#"[{"user":"kim","id":1},{"user":"lee"}]"#, true).unwrap();
        // serde_json's objects keep their keys sorted.
        assert_eq!(f.columns, ["id", "user"]);
        assert_eq!(f.rows[0], ["1", "kim"]);
        assert_eq!(f.rows[1], ["", "lee"]);
        // Random: each VU's row is fixed by its index, and both rows are used.
        let picks: std::collections::HashSet<&str> =
            (0..64).map(|vu| f.row(vu)[1].as_str()).collect();
        assert_eq!(picks.len(), 2);
        assert_eq!(f.row(5), f.row(5));
        assert!(parse("[1]", false).is_err());
        assert!(parse("{}", false).is_err());
    }
}
