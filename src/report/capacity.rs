//! The terminal view of a `--find-max` search: what it will do, the answer first
//! ("capacity ≈ 200 req/s with p99 < 100 ms on every endpoint (200 passed: …; 210
//! failed: …)"), a table of every step (level, achieved rate, p50/p90/p99 per
//! endpoint, errors, pass or the objective that failed) and the endpoint that limits
//! capacity; and the progress line. Formats only; never measures.

use std::fmt::Write as _;

use crate::load::search::{Search, SearchModel, SearchPlan, Stopped};
use crate::load::steps::{fmt_level, Check, Limit, Step};
use crate::load::threshold::{Metric, Op, Scope, Threshold};
use crate::load::LoadPlan;
use crate::report::table::{Align, Table};
use crate::units::fmt_ms;

fn unit(model: SearchModel) -> &'static str {
    match model {
        SearchModel::Open => "req/s",
        SearchModel::Closed => "connections",
    }
}

/// What the search will do, one line.
pub fn header(base: &LoadPlan, plan: &SearchPlan) -> String {
    let eps = if base.endpoints.len() > 1 {
        format!(", {} endpoints", base.endpoints.len())
    } else {
        String::new()
    };
    format!(
        "latscope load {} — finding the highest {} with {}: {} model, {} steps after {} to settle, \
         from {} ×{} until a step fails, then to within {}%{eps}\n",
        base.target.url,
        match plan.model {
            SearchModel::Open => "rate",
            SearchModel::Closed => "number of connections",
        },
        objectives_text(&plan.objectives, base.endpoints.len()),
        match plan.model {
            SearchModel::Open => "open",
            SearchModel::Closed => "closed",
        },
        humantime::format_duration(plan.step),
        humantime::format_duration(plan.settle),
        fmt_level(plan.min),
        crate::load::search::FACTOR,
        fmt_level(plan.precision * 100.0),
    )
}

fn metric_name(m: Metric) -> String {
    match m {
        Metric::Quantile(q) => {
            let pct = q as f64 / 1e4;
            let digits = format!("{pct}").replace('.', "");
            format!("p{digits}")
        }
        Metric::Min => "min".into(),
        Metric::Mean => "mean".into(),
        Metric::Max => "max".into(),
        Metric::ErrorRate => "error rate".into(),
        Metric::Rps => "rate".into(),
        Metric::Requests => "requests".into(),
        Metric::Checks => "checks passed".into(),
    }
}

fn value_text(m: Metric, v: f64) -> String {
    match m {
        Metric::ErrorRate | Metric::Checks => format!("{v:.2}%"),
        Metric::Rps => format!("{v:.0} req/s"),
        Metric::Requests => format!("{v:.0}"),
        _ => fmt_ms(v),
    }
}

/// One objective as people say it: "p99 < 100 ms", "checkout p99 < 800 ms".
pub fn objective_text(t: &Threshold) -> String {
    let op = match t.op {
        Op::Lt => "<",
        Op::Le => "≤",
        Op::Gt => ">",
        Op::Ge => "≥",
    };
    let what = format!(
        "{} {op} {}",
        metric_name(t.metric),
        value_text(t.metric, t.limit)
    );
    match &t.scope {
        Scope::Endpoint(e) => format!("{what} on {e}"),
        _ => what,
    }
}

fn objectives_text(o: &[Threshold], endpoints: usize) -> String {
    let parts: Vec<String> = o.iter().map(objective_text).collect();
    let every = o.iter().any(|t| t.scope != Scope::All || endpoints > 1)
        && o.iter().any(|t| !matches!(t.scope, Scope::Endpoint(_)));
    let mut s = parts.join(" and ");
    if every && endpoints > 1 {
        s.push_str(" on every endpoint");
    }
    s
}

/// A check's value: "p99 150 ms on /search".
fn check_text(c: &Check, objectives: &[Threshold], endpoints: usize) -> String {
    let o = &objectives[c.objective];
    let v = match c.verdict.value {
        Some(v) => format!("{} {}", metric_name(o.metric), value_text(o.metric, v)),
        None => format!("{}: no requests", metric_name(o.metric)),
    };
    match &c.verdict.endpoint {
        Some(e) if endpoints > 1 => format!("{v} on {e}"),
        _ => v,
    }
}

/// Why a step failed, briefly: the worst objective, or the rate that fell short.
fn why_failed(step: &Step, objectives: &[Threshold]) -> String {
    let eps = step.window.endpoints.len();
    if let Some(c) = step.worst_failure() {
        return check_text(c, objectives, eps);
    }
    if let Some(s) = step.shortfall {
        return format!(
            "{:.0} of {} req/s completed: {} could not keep up",
            s.achieved_rps,
            fmt_level(s.target_rps),
            match s.by {
                Limit::Client => "latscope (the client)",
                Limit::Server => "the server",
            }
        );
    }
    "interrupted".into()
}

/// The same check at another step (the pass step's value of the fail step's worst
/// objective).
fn same_check<'a>(step: &'a Step, like: &Check) -> Option<&'a Check> {
    step.checks
        .iter()
        .find(|c| c.objective == like.objective && c.verdict.endpoint == like.verdict.endpoint)
}

/// The answer, one sentence.
pub fn answer(s: &Search) -> String {
    let u = unit(s.model);
    let eps = s.steps.first().map_or(1, |st| st.window.endpoints.len());
    let with = objectives_text(&s.objectives, eps);
    let lvl = |st: &Step| fmt_level(st.plan.level.value());
    let pass_text = |p: &Step, f: Option<&Step>| {
        let like = f.and_then(|f| f.worst_failure()).or(p.tightest());
        let c = like.and_then(|l| same_check(p, l)).or(p.tightest());
        match c {
            Some(c) => format!("{} passed: {}", lvl(p), check_text(c, &s.objectives, eps)),
            None => format!("{} passed", lvl(p)),
        }
    };
    match (s.capacity(), s.failed()) {
        (None, Some(f)) => format!(
            "the objectives fail even at the lowest level: {} {u} failed: {}",
            lvl(f),
            why_failed(f, &s.objectives)
        ),
        (None, None) => "no step ran to its end: no answer".into(),
        (Some(p), None) => {
            let why = match s.stopped {
                Stopped::Cap => "the highest level allowed".to_string(),
                Stopped::MaxTime => "--max-time ended the search before a step failed".into(),
                _ => "interrupted before a step failed".into(),
            };
            format!(
                "capacity ≥ {} {u} with {with} ({}; {why})",
                lvl(p),
                pass_text(p, None)
            )
        }
        (Some(p), Some(f)) => {
            let approx = if s.stopped == Stopped::Precision {
                format!("capacity ≈ {} {u}", lvl(p))
            } else {
                format!(
                    "capacity between {} and {} {u} ({} before the bracket was within {}%)",
                    lvl(p),
                    lvl(f),
                    match s.stopped {
                        Stopped::MaxTime => "--max-time stopped the search",
                        _ => "interrupted",
                    },
                    fmt_level(s.precision * 100.0)
                )
            };
            format!(
                "{approx} with {with} ({}; {} failed: {})",
                pass_text(p, Some(f)),
                lvl(f),
                why_failed(f, &s.objectives)
            )
        }
    }
}

/// The answer, the steps table, the limiting endpoint and notes.
pub fn summary(s: &Search, answer: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n  {answer}\n");
    let mut order: Vec<(usize, &Step)> = s.steps.iter().enumerate().collect();
    order.sort_by(|a, b| a.1.plan.level.value().total_cmp(&b.1.plan.level.value()));
    let mut t = Table::new([
        "step", "level", "achieved", "endpoint", "p50", "p90", "p99", "errors", "result",
    ])
    .align(3, Align::Left)
    .align(8, Align::Left);
    for (i, st) in order {
        let result = if st.pass() {
            if s.pass.is_some_and(|p| std::ptr::eq(&s.steps[p], st)) {
                "pass  ◀ capacity".to_string()
            } else {
                "pass".to_string()
            }
        } else {
            match st.worst_failure() {
                Some(c) => format!("FAIL {}", c.verdict.expr),
                None => format!(
                    "FAIL rate ({})",
                    st.shortfall.map_or("interrupted", |x| x.by.as_str())
                ),
            }
        };
        let result = match &st.stopped_early {
            Some(e) => format!(
                "{result} (stopped at {}/{})",
                humantime::format_duration(e.scored),
                humantime::format_duration(e.planned)
            ),
            None => result,
        };
        for (j, e) in st.window.endpoints.iter().enumerate() {
            let p =
                crate::stats::Percentiles::from_histogram(&e.latency, crate::stats::Unit::Millis);
            let errors = e.requests - e.ok.min(e.requests);
            let first = j == 0;
            let cell = |v: String| if first { v } else { String::new() };
            t.row([
                cell(format!("{}", i + 1)),
                cell(fmt_level(st.plan.level.value())),
                cell(format!("{:.1}/s", st.achieved_rps())),
                e.name.clone(),
                fmt_ms(p.p50),
                fmt_ms(p.p90),
                fmt_ms(p.p99),
                if errors == 0 {
                    "0".to_string()
                } else {
                    format!(
                        "{errors} ({:.1}%)",
                        errors as f64 * 100.0 / e.requests.max(1) as f64
                    )
                },
                cell(result.clone()),
            ]);
        }
    }
    let _ = write!(out, "{}", t.render(2));
    if let Some(e) = s.limiting_endpoint() {
        let at = s.failed().or(s.capacity());
        let detail = at
            .and_then(|st| {
                st.worst_failure()
                    .filter(|c| c.verdict.endpoint.as_deref() == Some(e.as_str()))
                    .or(st.tightest())
                    .map(|c| {
                        format!(
                            " ({} at {} {}, against {})",
                            check_text(c, &s.objectives, 1),
                            fmt_level(st.plan.level.value()),
                            unit(s.model),
                            c.verdict.expr
                        )
                    })
            })
            .unwrap_or_default();
        let _ = writeln!(out, "\n  limiting endpoint: {e}{detail}");
    }
    for st in &s.steps {
        if let Some(sf) = st.shortfall.filter(|x| x.by == Limit::Client) {
            let _ = writeln!(
                out,
                "  note: at {} req/s latscope's own threads were {:.0}% busy: the client, not \
                 the server, could not keep up (more --threads, or run it from more machines)",
                fmt_level(sf.target_rps),
                st.client_busy_pct
            );
        }
    }
    for st in &s.steps {
        if let Some(e) = &st.stopped_early {
            let _ = writeln!(
                out,
                "  note: the step at {} stopped after {} of {}, its {} failure decided: {}",
                st.plan.level,
                humantime::format_duration(e.scored),
                humantime::format_duration(e.planned),
                e.objective,
                e.reason
            );
        }
    }
    if let Some(st) = &s.interrupted {
        let _ = writeln!(
            out,
            "  note: the step at {} was interrupted and is not judged",
            st.plan.level
        );
    }
    out
}

/// The progress line while a step runs.
pub fn progress_line(index: usize, level: &str, p: &crate::load::Progress) -> String {
    format!(
        "step {}: {level} · {:.0}s{} · {:.0} req/s · p99 {}",
        index + 1,
        p.elapsed.as_secs_f64(),
        p.length
            .map(|l| format!("/{:.0}s", l.as_secs_f64()))
            .unwrap_or_default(),
        p.rps,
        fmt_ms(p.p99_ms)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::threshold::parse;

    #[test]
    fn objectives_read_as_people_say_them() {
        assert_eq!(objective_text(&parse("p99<1s").unwrap()), "p99 < 1.00 s");
        assert_eq!(
            objective_text(&parse("p99.9<250ms").unwrap()),
            "p999 < 250 ms"
        );
        assert_eq!(
            objective_text(&parse("checkout:p90<=800ms").unwrap()),
            "p90 ≤ 800 ms on checkout"
        );
        assert_eq!(
            objective_text(&parse("errors<1%").unwrap()),
            "error rate < 1.00%"
        );
        let o = [parse("p99<100ms").unwrap(), parse("errors<1%").unwrap()];
        assert_eq!(
            objectives_text(&o, 2),
            "p99 < 100 ms and error rate < 1.00% on every endpoint"
        );
        assert_eq!(objectives_text(&o[..1], 1), "p99 < 100 ms");
    }
}
