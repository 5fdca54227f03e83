//! A small aligned-column text table for terminal output.

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A text table: a header row and data rows, rendered with aligned columns.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers; the first column is left-aligned, the
    /// others right-aligned (numbers).
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        let header: Vec<String> = header.into_iter().map(Into::into).collect();
        let align = (0..header.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect();
        Table {
            header,
            align,
            rows: Vec::new(),
        }
    }

    /// Overrides the alignment of one column.
    pub fn align(mut self, column: usize, align: Align) -> Self {
        if let Some(a) = self.align.get_mut(column) {
            *a = align;
        }
        self
    }

    /// Adds a row; missing cells render empty.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Renders the table, each line indented by `indent` spaces.
    pub fn render(&self, indent: usize) -> String {
        let cols = self
            .header
            .len()
            .max(self.rows.iter().map(Vec::len).max().unwrap_or(0));
        let mut width = vec![0usize; cols];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let pad = " ".repeat(indent);
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = pad.clone();
            for (i, w) in width.iter().enumerate() {
                let cell = r.get(i).map(String::as_str).unwrap_or("");
                let n = cell.chars().count();
                let fill = " ".repeat(w.saturating_sub(n));
                if i > 0 {
                    line.push_str("  ");
                }
                match self.align.get(i).copied().unwrap_or(Align::Right) {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&fill);
                    }
                    Align::Right => {
                        line.push_str(&fill);
                        line.push_str(cell);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(["phase", "p50"]);
        t.row(["dns", "0.05 ms"]);
        t.row(["connect", "40.1 ms"]);
        let s = t.render(2);
        assert_eq!(
            s,
            "  phase        p50\n  dns      0.05 ms\n  connect  40.1 ms\n"
        );
    }
}
