//! The configuration a load run is stored with (`RunRecord.config` of a load run):
//! the plan's settings, a search's `find_max`, a merge's `merged` — what `merge`
//! compares to tell shards of one plan, and what `report` shows.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::load::ShardDoc;
use crate::load::plan::{LoadPlan, Model};
use crate::load::scenario::Order;
use crate::net::HttpVersionPref;

/// A load plan's settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanDoc {
    pub target: String,
    /// "closed" or "open".
    pub model: String,
    /// Open model: the arrival rate, req/s.
    pub rate: Option<f64>,
    pub connections: u32,
    pub duration_s: Option<f64>,
    pub count: Option<u64>,
    pub stages: Vec<StageDoc>,
    pub threads: u64,
    pub streams: u32,
    pub keepalive: bool,
    pub think_time_ms: f64,
    pub timeout_ms: f64,
    /// "auto", "1.1", "2" or "3".
    pub http: String,
    /// "sequence" or "weighted".
    pub order: String,
    pub endpoints: Vec<EndpointConfig>,
    pub thresholds: Vec<String>,
    /// A shard's place (null for a whole run).
    pub shard: Option<ShardDoc>,
    /// A `--find-max` search's settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub find_max: Option<FindMaxConfig>,
    /// A merge of shards: where it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<super::shards::MergedInfo>,
}

/// One stage of `--stages`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StageDoc {
    pub duration_s: f64,
    pub target: f64,
}

/// One endpoint of the plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EndpointConfig {
    pub name: String,
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body_bytes: u64,
    pub weight: u32,
}

/// A `--find-max` search's settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FindMaxConfig {
    pub objectives: Vec<String>,
    /// "open" or "closed".
    pub model: String,
    pub min: f64,
    pub max: f64,
    pub precision_pct: f64,
    pub step_s: f64,
    pub settle_s: f64,
    pub max_time_s: f64,
    pub early_stop: bool,
}

impl From<&LoadPlan> for PlanDoc {
    fn from(p: &LoadPlan) -> PlanDoc {
        PlanDoc {
            target: p.target.url.clone(),
            model: p.model_name().to_string(),
            rate: match p.model {
                Model::Open { rate } => Some(rate),
                Model::Closed => None,
            },
            connections: p.connections,
            duration_s: p.duration.map(|d| d.as_secs_f64()),
            count: p.count,
            stages: p
                .stages
                .iter()
                .map(|s| StageDoc {
                    duration_s: s.duration.as_secs_f64(),
                    target: s.target,
                })
                .collect(),
            threads: p.threads as u64,
            streams: p.streams,
            keepalive: p.keepalive,
            think_time_ms: crate::units::ms(p.think_time),
            timeout_ms: crate::units::ms(p.client.timeout),
            http: match p.client.version {
                _ if p.client.http3 => "3",
                HttpVersionPref::Auto => "auto",
                HttpVersionPref::Http1 => "1.1",
                HttpVersionPref::Http2 => "2",
            }
            .into(),
            order: match p.order {
                Order::Sequence => "sequence",
                Order::Weighted => "weighted",
            }
            .into(),
            endpoints: p
                .endpoints
                .iter()
                .map(|e| EndpointConfig {
                    name: e.name.clone(),
                    method: e.method.as_str().to_string(),
                    path: e.path_and_query.clone(),
                    headers: e
                        .headers
                        .iter()
                        .map(|(n, v)| {
                            (n.as_str().to_string(), v.to_str().unwrap_or("").to_string())
                        })
                        .collect(),
                    body_bytes: e.body.len() as u64,
                    weight: e.weight,
                })
                .collect(),
            thresholds: p.thresholds.iter().map(|t| t.expr.clone()).collect(),
            shard: (!p.shard.is_whole()).then_some(ShardDoc {
                index: p.shard.index + 1,
                count: p.shard.count,
            }),
            find_max: None,
            merged: None,
        }
    }
}
