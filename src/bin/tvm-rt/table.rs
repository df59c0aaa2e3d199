//! Plain-text tables: columns padded to their widest cell, numbers right-aligned.

/// Render `rows` under `headers`, two spaces between columns. A column is right-aligned when
/// its header starts with a space (" time (us)").
pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..headers.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).chain([headers[c].trim().len()]).max().unwrap_or(0))
        .collect();
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(c, cell)| match headers[c].starts_with(' ') {
                true => format!("{cell:>w$}", w = widths[c]),
                false => format!("{cell:<w$}", w = widths[c]),
            })
            .collect();
        format!("  {}\n", padded.join("  ").trim_end())
    };
    let mut out = line(headers.iter().map(|h| h.trim()).collect());
    for r in rows {
        out += &line(r.iter().map(String::as_str).collect());
    }
    out
}

/// 1234567 -> "1,234,567"
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}
