//! A suite's results as JUnit XML (one `testcase` per case, a `failure`
//! when any of its runs failed), for CI systems that show test reports.

use super::report::Report;

/// The JUnit XML document of `report`.
pub(crate) fn xml(report: &Report) -> String {
    let failed = report.cases.iter().filter(|c| !c.ok()).count();
    let seconds: f64 = report
        .cases
        .iter()
        .map(|c| c.latency_ms * c.runs as f64 / 1000.0)
        .sum();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" time=\"{seconds:.3}\">\n",
        escape(&report.suite),
        report.cases.len()
    );
    for c in &report.cases {
        let time = c.latency_ms * c.runs as f64 / 1000.0;
        out.push_str(&format!(
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{time:.3}\">\n",
            escape(&report.suite),
            escape(&c.name)
        ));
        out.push_str(&format!(
            "      <properties><property name=\"pass_rate\" value=\"{}\"/><property name=\"cost\" value=\"{}\"/><property name=\"turns\" value=\"{}\"/></properties>\n",
            c.pass_rate, c.cost, c.turns
        ));
        if !c.ok() {
            out.push_str(&format!(
                "      <failure message=\"{} of {} run(s) failed\">{}</failure>\n",
                c.runs - c.passed,
                c.runs,
                escape(&c.failures.join("\n"))
            ));
        }
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// `text` with XML's special characters escaped (and control characters
/// XML 1.0 cannot carry dropped).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => out.push(ch),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn special_characters_are_escaped() {
        assert_eq!(escape("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;");
    }
}
