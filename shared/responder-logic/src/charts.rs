//! Charts beside an answer's tables: Slack's data visualization block
//! (<https://docs.slack.dev/reference/block-kit/blocks/data-visualization-block>),
//! for a table whose first column names its rows and whose other columns
//! are numbers. A line chart when the rows are times or dates, else a bar
//! chart; one series a numeric column.
//!
//! Only a table that fits Slack's limits whole is charted: nothing is
//! sampled, dropped or merged, so the chart shows exactly the table beside
//! it (which stays, and is the message's text fallback). A column with one
//! cell that is not a plain number (text, emphasis, a link, an empty cell,
//! `NaN`, a number too large for a double), columns in different units, or
//! labels that are no longer distinct once cut to Slack's length: no chart.
//! Chart strings cannot ping: Slack's `<`/`>` become `‹`/`›`, so the output
//! guard (which would lengthen `<!channel>` past a label's limit) has
//! nothing to change.

use serde_json::{Value, json};

/// "A short label displayed above the chart. Maximum 50 characters."
pub const CHART_TITLE_CHARS: usize = 50;
/// A data point's label, a series' name and an axis category: at most 20
/// characters each (the data visualization block's Data Series, Data
/// Point and Axis Config).
pub const CHART_LABEL_CHARS: usize = 20;
/// An axis title (`x_label`, `y_label`): at most 50 characters.
pub const CHART_AXIS_LABEL_CHARS: usize = 50;
/// A line, bar or area chart's `series`: "Min 1, max 6".
pub const CHART_SERIES: usize = 6;
/// Points a series holds at most (its `data`: 1 to 20): the rows charted.
pub const CHART_POINTS: usize = 20;
/// Data visualization blocks a message may hold (Slack's changelog of
/// 2026-06-16 and its Block Kit reference).
pub const CHARTS_PER_MESSAGE: usize = 2;

/// The chart of a table, when it has one: `header` the column names,
/// `body` its rows, each cell its written text or `None` when it is not
/// plain text (emphasis, code, a link).
pub(crate) fn chart(header: &[String], body: &[Vec<Option<String>>]) -> Option<Value> {
    let width = header.len();
    if !(2..=1 + CHART_SERIES).contains(&width) || !(2..=CHART_POINTS).contains(&body.len()) {
        return None;
    }
    if body.iter().any(|row| row.len() != width) {
        return None;
    }
    let labels: Vec<String> = body
        .iter()
        .map(|row| row[0].as_deref().map(|text| clip(text, CHART_LABEL_CHARS)).filter(|label| !label.is_empty()))
        .collect::<Option<_>>()?;
    if !distinct(&labels) {
        return None;
    }
    let mut names = Vec::with_capacity(width - 1);
    let mut unit: Option<Option<String>> = None;
    let mut series = Vec::with_capacity(width - 1);
    for (column, name) in header.iter().enumerate().skip(1) {
        let name = clip(name, CHART_LABEL_CHARS);
        if name.is_empty() {
            return None;
        }
        let mut data = Vec::with_capacity(body.len());
        for (row, label) in body.iter().zip(&labels) {
            let (value, cell_unit) = number(row[column].as_deref()?)?;
            // One unit on the one value axis: 120 ms beside 4 % would mislead.
            match &unit {
                Some(seen) if *seen != cell_unit => return None,
                Some(_) => {}
                None => unit = Some(cell_unit),
            }
            data.push(json!({"label": label, "value": json_number(value)}));
        }
        series.push(json!({"name": name, "data": data}));
        names.push(name);
    }
    if !distinct(&names) {
        return None;
    }
    let over_time = labels.iter().all(|label| looks_like_time(label));
    let by = clip(&header[0], CHART_AXIS_LABEL_CHARS);
    let title = if by.is_empty() { names.join(", ") } else { format!("{} by {by}", names.join(", ")) };
    let mut axis = json!({"categories": labels});
    if !by.is_empty() {
        axis["x_label"] = json!(by);
    }
    if let Some(Some(unit)) = unit {
        axis["y_label"] = json!(clip(&unit, CHART_AXIS_LABEL_CHARS));
    }
    Some(json!({
        "type": "data_visualization",
        "title": clip(&title, CHART_TITLE_CHARS),
        "chart": {"type": if over_time { "line" } else { "bar" }, "series": series, "axis_config": axis},
    }))
}

/// A plain cell's number and unit: `1,234`, `-0.5`, `4.1%`, `120 ms`,
/// `2.5e3 req/s`. `None` for anything else: words, `NaN`, `inf`, `1,5`,
/// a value a double cannot hold.
pub(crate) fn number(text: &str) -> Option<(f64, Option<String>)> {
    let text = text.trim();
    let bytes = text.as_bytes();
    let mut at = 0;
    let mut digits = String::new();
    if let Some(sign @ (b'-' | b'+')) = bytes.first() {
        if *sign == b'-' {
            digits.push('-');
        }
        at += 1;
    }
    // The integer part: digits, or groups of three after the first commas.
    let start = at;
    let mut group = 0usize;
    let mut grouped = false;
    while at < bytes.len() {
        match bytes[at] {
            b'0'..=b'9' => {
                digits.push(bytes[at] as char);
                group += 1;
            }
            b',' if at > start && (!grouped || group == 3) && (grouped || group <= 3) => {
                grouped = true;
                group = 0;
            }
            _ => break,
        }
        at += 1;
    }
    if at == start || (grouped && group != 3) {
        return None;
    }
    if bytes.get(at) == Some(&b'.') && bytes.get(at + 1).is_some_and(u8::is_ascii_digit) {
        digits.push('.');
        at += 1;
        while bytes.get(at).is_some_and(u8::is_ascii_digit) {
            digits.push(bytes[at] as char);
            at += 1;
        }
    }
    if let Some(b'e' | b'E') = bytes.get(at) {
        let sign = usize::from(matches!(bytes.get(at + 1), Some(b'-' | b'+')));
        if bytes.get(at + 1 + sign).is_some_and(u8::is_ascii_digit) {
            digits.push_str(&text[at..at + 1 + sign]);
            at += 1 + sign;
            while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                digits.push(bytes[at] as char);
                at += 1;
            }
        }
    }
    let value: f64 = digits.parse().ok()?;
    if !value.is_finite() {
        return None;
    }
    let unit = text[at..].trim();
    let unit_ok = unit.chars().count() <= 8 && unit.chars().all(|c| c.is_alphabetic() || matches!(c, '%' | '/' | 'µ'));
    unit_ok.then(|| (value, (!unit.is_empty()).then(|| unit.to_owned())))
}

/// A whole number as an integer in the JSON (`42`, not `42.0`).
pub(crate) fn json_number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 { json!(value as i64) } else { json!(value) }
}

/// `text` as a chart shows it: one line, no `<`/`>` (nothing in a chart
/// pings or links), at most `max` characters (cut with `…`).
fn clip(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| match c {
            '<' => '‹',
            '>' => '›',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    let words = one_line.split_whitespace().collect::<Vec<_>>().join(" ");
    if words.chars().count() <= max {
        return words;
    }
    let mut cut: String = words.chars().take(max - 1).collect::<String>().trim_end().to_owned();
    cut.push('…');
    cut
}

fn distinct(names: &[String]) -> bool {
    let mut seen = std::collections::HashSet::with_capacity(names.len());
    names.iter().all(|name| seen.insert(name))
}

/// A time or a date: `10:05`, `2026-11-27`, `2026-11-27T10:05:00Z`.
fn looks_like_time(label: &str) -> bool {
    let b = label.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let clock = b.iter().enumerate().any(|(i, c)| *c == b':' && i > 0 && digit(i - 1) && digit(i + 1));
    let date = digit(0) && digit(1) && digit(2) && digit(3) && b.get(4) == Some(&b'-') && digit(5);
    clock || date
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(rows: &[&[&str]]) -> (Vec<String>, Vec<Vec<Option<String>>>) {
        let header = rows[0].iter().map(|c| c.to_string()).collect();
        let body = rows[1..].iter().map(|row| row.iter().map(|c| Some(c.to_string())).collect()).collect();
        (header, body)
    }

    #[test]
    fn numbers_are_plain_numbers_with_one_unit_and_nothing_else() {
        assert_eq!(number("1,234"), Some((1234.0, None)));
        assert_eq!(number(" -0.5 "), Some((-0.5, None)));
        assert_eq!(number("4.1%"), Some((4.1, Some("%".into()))));
        assert_eq!(number("120 ms"), Some((120.0, Some("ms".into()))));
        assert_eq!(number("2.5e3 req/s"), Some((2500.0, Some("req/s".into()))));
        for not in
            ["NaN", "nan", "inf", "-inf", "infinity", "1e400", "1,5", "12,34,567", "", "-", "ms", "v1.2.3", "1 2"]
        {
            assert_eq!(number(not), None, "{not}");
        }
        assert_eq!(number(&"9".repeat(400)), None, "a value no double holds");
    }

    #[test]
    fn a_label_column_and_numeric_columns_make_a_chart_within_slacks_limits() {
        let (header, body) =
            plain(&[&["minute", "p99", "p50"], &["10:00", "120 ms", "40 ms"], &["10:05", "4,200 ms", "41 ms"]]);
        let chart = chart(&header, &body).expect("a chart");
        assert_eq!(chart["type"], "data_visualization");
        assert_eq!(chart["title"], "p99, p50 by minute");
        assert_eq!(chart["chart"]["type"], "line", "times: a line");
        assert_eq!(
            chart["chart"]["axis_config"],
            json!({"categories": ["10:00", "10:05"], "x_label": "minute", "y_label": "ms"})
        );
        assert_eq!(
            chart["chart"]["series"][0],
            json!({"name": "p99", "data": [{"label": "10:00", "value": 120}, {"label": "10:05", "value": 4200}]})
        );
        let (header, body) = plain(&[&["service", "errors"], &["checkout", "12"], &["auth", "0.5"]]);
        assert_eq!(super::chart(&header, &body).unwrap()["chart"]["type"], "bar", "names: bars");
    }

    #[test]
    fn hostile_tables_get_no_chart_or_one_inside_the_limits() {
        // Mixed cells, NaN, infinity, units that differ, a cell that is not plain.
        for rows in [
            &[&["s", "n"][..], &["a", "1"], &["b", "many"]][..],
            &[&["s", "n"], &["a", "1"], &["b", "NaN"]],
            &[&["s", "n"], &["a", "1"], &["b", "1e999"]],
            &[&["s", "n", "m"], &["a", "1 ms", "1 %"], &["b", "2 ms", "2 %"]],
            &[&["s", "n"], &["a", "1"]],
        ] {
            let (header, body) = plain(rows);
            assert_eq!(chart(&header, &body), None, "{rows:?}");
        }
        let (header, mut body) = plain(&[&["s", "n"], &["a", "1"], &["b", "2"]]);
        body[1][1] = None;
        assert_eq!(chart(&header, &body), None, "emphasis or a link: not a number");
        // More points or series than a chart holds: no chart (nothing sampled).
        let long: Vec<Vec<Option<String>>> =
            (0..=CHART_POINTS).map(|n| vec![Some(format!("r{n}")), Some("1".into())]).collect();
        assert_eq!(chart(&["s".into(), "n".into()], &long), None);
        let wide: Vec<String> = (0..=CHART_SERIES + 1).map(|n| format!("c{n}")).collect();
        let row = |r: &str| -> Vec<Option<String>> {
            std::iter::once(Some(r.to_owned())).chain((0..=CHART_SERIES).map(|_| Some("1".into()))).collect()
        };
        assert_eq!(chart(&wide, &[row("a"), row("b")]), None);
        // A 300-character header, labels with mentions, huge numbers: cut, unable to ping, kept.
        let huge = format!("{}", f64::MAX);
        let (header, body) = plain(&[
            &[&format!("<!channel> region {}", "y".repeat(100)), &"x".repeat(300)],
            &["<!channel> eu-west-1 and more words", &huge],
            &["<!here>", "-1e300"],
        ]);
        let chart = chart(&header, &body).expect("a chart");
        let json = chart.to_string();
        assert!(!json.contains('<') && !json.contains('>'), "{json}");
        assert_eq!(chart["title"].as_str().unwrap().chars().count(), CHART_TITLE_CHARS);
        let name = chart["chart"]["series"][0]["name"].as_str().unwrap();
        assert!(name.chars().count() <= CHART_LABEL_CHARS && name.ends_with('…'), "{name}");
        for category in chart["chart"]["axis_config"]["categories"].as_array().unwrap() {
            assert!(category.as_str().unwrap().chars().count() <= CHART_LABEL_CHARS, "{category}");
        }
        assert!(chart["chart"]["axis_config"]["x_label"].as_str().unwrap().chars().count() <= CHART_AXIS_LABEL_CHARS);
        assert_eq!(chart["chart"]["series"][0]["data"][0]["value"], json!(f64::MAX));
        // Labels alike once cut: which bar is which is lost, so no chart.
        let (header, body) =
            plain(&[&["s", "n"], &["a-very-long-label-one-x", "1"], &["a-very-long-label-one-y", "2"]]);
        assert_eq!(super::chart(&header, &body), None);
    }
}
