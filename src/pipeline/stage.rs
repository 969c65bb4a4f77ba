//! The stages of a request, as answers, timings, `--stages` and the front
//! ends name them: each channel, the fused list, the records read for it
//! and the rerank stage.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::channel::ChannelId;

/// One stage of a request. Written (in JSON, timings and messages) as its
/// [`Stage::name`]: a channel's name, `fuse`, `records` or `rerank`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Stage {
    /// A channel's retrieval.
    Channel(ChannelId),
    /// The channels' lists fused, one entry per work, the papers the
    /// passage already cites last (also what an answer made before any
    /// stage ran stands for).
    #[default]
    Fuse,
    /// The records and evidence of the fused list read.
    Records,
    /// The rerank stage.
    Rerank,
}

impl Stage {
    /// Short stable name, used in output, `--stages` and timings.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Channel(id) => id.name(),
            Stage::Fuse => "fuse",
            Stage::Records => "records",
            Stage::Rerank => "rerank",
        }
    }

    /// The stage of a name, if any.
    pub fn from_name(name: &str) -> Option<Stage> {
        match name {
            "fuse" => Some(Stage::Fuse),
            "records" => Some(Stage::Records),
            "rerank" => Some(Stage::Rerank),
            _ => ChannelId::from_name(name).map(Stage::Channel),
        }
    }

    /// The channel, when the stage is one.
    pub fn channel(self) -> Option<ChannelId> {
        match self {
            Stage::Channel(id) => Some(id),
            _ => None,
        }
    }
}

impl From<ChannelId> for Stage {
    fn from(id: ChannelId) -> Stage {
        Stage::Channel(id)
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Stage {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Stage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Stage, D::Error> {
        let name = String::deserialize(d)?;
        Stage::from_name(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown stage `{name}`")))
    }
}

/// Wall time per stage, in the order they ran.
pub type StageTimings = Vec<(Stage, std::time::Duration)>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_are_written_and_read_by_name() {
        let all = [Stage::Channel(ChannelId::Bm25), Stage::Channel(ChannelId::Hatten), Stage::Fuse, Stage::Records, Stage::Rerank];
        for stage in all {
            assert_eq!(Stage::from_name(stage.name()), Some(stage));
            let json = serde_json::to_string(&stage).unwrap();
            assert_eq!(json, format!("\"{stage}\""));
            assert_eq!(serde_json::from_str::<Stage>(&json).unwrap(), stage);
        }
        assert_eq!(Stage::Channel(ChannelId::Evidence).name(), "evidence");
        assert_eq!(Stage::Rerank.channel(), None);
        assert_eq!(Stage::from(ChannelId::Citation).channel(), Some(ChannelId::Citation));
        assert_eq!(Stage::from_name("dense"), None);
        assert!(serde_json::from_str::<Stage>("\"dense\"").unwrap_err().to_string().contains("unknown stage `dense`"));
    }
}
