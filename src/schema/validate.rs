//! The ranges a document's fields must be in, beyond their types: what `import`
//! (and `merge` of export files) checks before a run from elsewhere is stored or
//! added. Every number finite, not negative (findings' evidence apart) and below
//! 10^15; counts that are parts no larger than their whole (`ok` ≤ `requests`), hit
//! ratios within 0..1, percentages within 0..100, status codes real ones, a shard's
//! index within its count. The error names the field.

use serde::Serialize;
use serde_json::Value;

use super::load::TimelineRow;
use super::{LoadDoc, PlanDoc, SchemaError, Summary};

/// The largest number a document holds (no count, duration or latency comes near).
pub const MAX_NUMBER: f64 = 1e15;

/// Checks every number of `doc` (through its JSON form): finite, within
/// ±[`MAX_NUMBER`], and not negative outside findings' evidence.
pub fn numbers<T: Serialize>(doc: &T, path: &str) -> Result<(), SchemaError> {
    let v = serde_json::to_value(doc).map_err(|e| SchemaError::new(path, e.to_string()))?;
    walk(&v, path, false)
}

fn walk(v: &Value, path: &str, signed: bool) -> Result<(), SchemaError> {
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if !x.is_finite() || x.abs() > MAX_NUMBER {
                return Err(SchemaError::new(path, format!("{n} is out of range")));
            }
            if x < 0.0 && !signed {
                return Err(SchemaError::new(path, format!("{n} is negative")));
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{i}]"), signed)?;
            }
            Ok(())
        }
        Value::Object(m) => {
            for (k, item) in m {
                // Evidence may hold differences; a freshness lifetime may be negative (an
                // Expires in the past).
                let signed = signed
                    || matches!(
                        k.as_str(),
                        "evidence" | "freshness_s" | "fresh_for_s" | "default_caches_ttl_s"
                    );
                walk(item, &format!("{path}.{k}"), signed)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A part no larger than its whole.
fn part(path: &str, what: &str, n: u64, of: &str, whole: u64) -> Result<(), SchemaError> {
    if n > whole {
        return Err(SchemaError::new(
            format!("{path}.{what}"),
            format!("{n} is more than {of} ({whole})"),
        ));
    }
    Ok(())
}

fn ratio(path: &str, v: Option<f64>, max: f64) -> Result<(), SchemaError> {
    match v {
        Some(x) if !(0.0..=max).contains(&x) => Err(SchemaError::new(
            path,
            format!("{x} is not within 0..{max}"),
        )),
        _ => Ok(()),
    }
}

/// Checks a timeline row.
pub fn row(r: &TimelineRow, path: &str) -> Result<(), SchemaError> {
    numbers(r, path)?;
    part(path, "ok", r.ok, "requests", r.requests)?;
    part(path, "errors", r.errors, "requests", r.requests)?;
    part(path, "checks_failed", r.checks_failed, "checks", r.checks)?;
    Ok(())
}

/// Checks a load document (with its steps and timeline).
pub fn load(l: &mut LoadDoc, path: &str) -> Result<(), SchemaError> {
    for (i, r) in l.timeline.iter().enumerate() {
        row(r, &format!("{path}.timeline[{i}]"))?;
    }
    // The rest apart from the timeline (checked row by row above).
    let timeline = std::mem::take(&mut l.timeline);
    let rest = numbers(&*l, path);
    l.timeline = timeline;
    rest?;
    part(path, "ok", l.ok, "requests", l.requests)?;
    part(path, "cache_hits", l.cache_hits, "ok", l.ok)?;
    let errors = l.errors.values().fold(0u64, |a, n| a.saturating_add(*n));
    part(path, "errors", errors, "requests", l.requests)?;
    let mut answered = 0u64;
    for (code, n) in &l.statuses {
        if !code.parse::<u16>().is_ok_and(|c| (100..=599).contains(&c)) {
            return Err(SchemaError::new(
                format!("{path}.statuses"),
                format!("'{}' is not an HTTP status code", code.escape_default()),
            ));
        }
        answered = answered.saturating_add(*n);
    }
    part(path, "statuses", answered, "requests", l.requests)?;
    ratio(&format!("{path}.cache.hit_ratio"), l.cache.hit_ratio, 1.0)?;
    for (i, e) in l.endpoints.iter().enumerate() {
        part(
            &format!("{path}.endpoints[{i}]"),
            "ok",
            e.ok,
            "requests",
            e.requests,
        )?;
    }
    for (i, s) in l.steps.iter().flatten().enumerate() {
        let p = format!("{path}.steps[{i}]");
        part(&p, "ok", s.ok, "requests", s.requests)?;
        ratio(&format!("{p}.error_rate_pct"), s.error_rate_pct, 100.0)?;
    }
    if let Some(shard) = l.shard {
        shard_place(shard, &format!("{path}.shard"))?;
    }
    Ok(())
}

fn shard_place(s: super::load::ShardDoc, path: &str) -> Result<(), SchemaError> {
    if s.count == 0 || s.index == 0 || s.index > s.count {
        return Err(SchemaError::new(
            path,
            format!(
                "shard {}/{}: the index is not within the count",
                s.index, s.count
            ),
        ));
    }
    Ok(())
}

/// Checks a run's summary.
pub fn summary(s: &mut Summary) -> Result<(), SchemaError> {
    const P: &str = "summary";
    match s {
        Summary::Load(l) => load(l, P),
        Summary::Disk(d) => {
            for (i, r) in d.timeline.iter().enumerate() {
                numbers(r, &format!("{P}.timeline[{i}]"))?;
            }
            let timeline = std::mem::take(&mut d.timeline);
            let rest = numbers(&**d, P);
            d.timeline = timeline;
            rest
        }
        Summary::Page(p) => {
            for (i, v) in p.visits.iter().enumerate() {
                numbers(v, &format!("{P}.visits[{i}]"))?;
            }
            let visits = std::mem::take(&mut p.visits);
            let rest = numbers(&**p, P);
            p.visits = visits;
            rest
        }
        Summary::Probe(_) | Summary::Diagnose(_) => {
            for (i, p) in s.probes_mut().into_iter().enumerate() {
                let path = format!("{P}.probe[{i}]");
                for (j, sample) in p.samples.iter().enumerate() {
                    numbers(sample, &format!("{path}.samples[{j}]"))?;
                }
                // The rest apart from the samples (checked one by one above).
                let samples = std::mem::take(&mut p.samples);
                let rest = numbers(&*p, &path);
                p.samples = samples;
                rest?;
            }
            if let Summary::Diagnose(d) = s {
                for (i, doc) in d.diagnoses().into_iter().enumerate() {
                    let path = format!("{P}.diagnosis[{i}]");
                    if let Some(l) = &doc.load {
                        for (j, r) in l.timeline.iter().enumerate() {
                            row(r, &format!("{path}.load.timeline[{j}]"))?;
                        }
                        numbers(&l.ramp, &format!("{path}.load.ramp"))?;
                        ratio(
                            &format!("{path}.load.cache_hit_ratio"),
                            l.cache_hit_ratio,
                            1.0,
                        )?;
                    }
                    if let Some(c) = doc.cache.audit() {
                        numbers(c, &format!("{path}.cache"))?;
                        ratio(
                            &format!("{path}.cache.load_hit_ratio"),
                            c.load_hit_ratio,
                            1.0,
                        )?;
                    }
                    numbers(&doc.findings, &format!("{path}.findings"))?;
                }
            }
            Ok(())
        }
    }
}

/// Checks a load run's config.
pub fn plan(p: &PlanDoc) -> Result<(), SchemaError> {
    numbers(p, "config")?;
    if let Some(s) = p.shard {
        shard_place(s, "config.shard")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row's failed checks are part of its checks (an imported shard file that
    /// says otherwise is refused, naming the field).
    #[test]
    fn failed_checks_are_part_of_the_checks() {
        let mut r = TimelineRow {
            checks: 10,
            checks_failed: 10,
            ..TimelineRow::default()
        };
        assert!(row(&r, "t[0]").is_ok());
        r.checks_failed = 11;
        let e = row(&r, "t[0]").unwrap_err().to_string();
        assert!(e.contains("t[0].checks_failed"), "{e}");
    }
}
