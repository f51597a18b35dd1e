//! Mental models: fifteen structured reasoning frameworks, each a Markdown
//! prompt written for thoughtbox (when to use, steps, a worked example,
//! pitfalls), with a title, a description and tags. The catalog
//! (`content/catalog.json`) and the prompts are compiled into the binary and
//! parsed once; the tests check that they agree.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::{Error, Result};

const CATALOG_JSON: &str = include_str!("content/catalog.json");

/// Every model's prompt, by name.
const CONTENT: &[(&str, &str)] = &[
    ("rubber-duck", include_str!("content/rubber-duck.md")),
    ("five-whys", include_str!("content/five-whys.md")),
    ("pre-mortem", include_str!("content/pre-mortem.md")),
    ("steelmanning", include_str!("content/steelmanning.md")),
    ("fermi-estimation", include_str!("content/fermi-estimation.md")),
    ("trade-off-matrix", include_str!("content/trade-off-matrix.md")),
    ("decomposition", include_str!("content/decomposition.md")),
    ("inversion", include_str!("content/inversion.md")),
    (
        "abstraction-laddering",
        include_str!("content/abstraction-laddering.md"),
    ),
    (
        "constraint-relaxation",
        include_str!("content/constraint-relaxation.md"),
    ),
    ("assumption-surfacing", include_str!("content/assumption-surfacing.md")),
    ("adversarial-thinking", include_str!("content/adversarial-thinking.md")),
    (
        "time-horizon-shifting",
        include_str!("content/time-horizon-shifting.md"),
    ),
    ("impact-effort-grid", include_str!("content/impact-effort-grid.md")),
    ("opportunity-cost", include_str!("content/opportunity-cost.md")),
];

/// A tag and when to use the models that carry it (TagDefinition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TagDefinition {
    pub name: String,
    pub description: String,
}

#[derive(Debug, Clone, Deserialize)]
struct CatalogEntry {
    name: String,
    title: String,
    description: String,
    tags: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct CatalogFile {
    tags: Vec<TagDefinition>,
    models: Vec<CatalogEntry>,
}

/// A mental model (MentalModelDefinition).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MentalModel {
    pub name: String,
    pub title: String,
    pub description: String,
    pub tags: Vec<String>,
    pub content: &'static str,
}

/// The tags and models, in catalog order.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub tags: Vec<TagDefinition>,
    pub models: Vec<MentalModel>,
}

fn load() -> Catalog {
    let file: CatalogFile = match serde_json::from_str(CATALOG_JSON) {
        Ok(f) => f,
        Err(e) => {
            tracing::error!("the built-in mental model catalog does not parse: {e}");
            return Catalog::default();
        }
    };
    let models = file
        .models
        .into_iter()
        .filter_map(|m| match CONTENT.iter().find(|(n, _)| *n == m.name) {
            Some((_, content)) => Some(MentalModel {
                name: m.name,
                title: m.title,
                description: m.description,
                tags: m.tags,
                content,
            }),
            None => {
                tracing::error!(model = %m.name, "mental model without a prompt; left out");
                None
            }
        })
        .collect();
    Catalog {
        tags: file.tags,
        models,
    }
}

static CATALOG: LazyLock<Catalog> = LazyLock::new(load);

/// The catalog, parsed on first use.
pub fn catalog() -> &'static Catalog {
    &CATALOG
}

/// The model called `name`.
pub fn get(name: &str) -> Option<&'static MentalModel> {
    catalog().models.iter().find(|m| m.name == name)
}

/// Every model name, in catalog order.
pub fn names() -> Vec<&'static str> {
    catalog().models.iter().map(|m| m.name.as_str()).collect()
}

/// Every tag name, in catalog order.
pub fn tag_names() -> Vec<&'static str> {
    catalog().tags.iter().map(|t| t.name.as_str()).collect()
}

/// The model called `name`, or `INVALID_PAYLOAD` listing the valid names.
pub fn require(field: &str, name: &str) -> Result<&'static MentalModel> {
    // Also by its title or another spelling of its name (`Five Whys`,
    // `five_whys`, `FIVE-WHYS`), as agents write it.
    let folded: String = name
        .trim()
        .chars()
        .map(|c| {
            if c == ' ' || c == '_' {
                '-'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    get(name)
        .or_else(|| get(&folded))
        .or_else(|| {
            catalog()
                .models
                .iter()
                .find(|m| m.title.eq_ignore_ascii_case(name.trim()))
        })
        .ok_or_else(|| {
            Error::invalid_with(
                field,
                format!("unknown mental model {name:?}; valid models: {}", names().join(", ")),
                json!({ "validModels": names() }),
            )
        })
}

/// Models carrying every one of `tags` (all when empty). An unknown tag is
/// `INVALID_PAYLOAD` listing the valid tags.
pub fn with_tags(field: &str, tags: &[String]) -> Result<Vec<&'static MentalModel>> {
    let known = tag_names();
    if let Some(bad) = tags.iter().find(|t| !known.contains(&t.as_str())) {
        return Err(Error::invalid_with(
            field,
            format!("unknown tag {bad:?}; valid tags: {}", known.join(", ")),
            json!({ "validTags": known }),
        ));
    }
    Ok(catalog()
        .models
        .iter()
        .filter(|m| tags.iter().all(|t| m.tags.contains(t)))
        .collect())
}

/// The MCP resource URI of a model.
pub fn uri(name: &str) -> String {
    format!("thoughtbox://mental-models/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fifteen model ids the specification's `get_model` accepts
    /// (its `modelId` enum): the catalog must hold exactly these.
    const SEED_MODELS: [&str; 15] = [
        "rubber-duck",
        "five-whys",
        "pre-mortem",
        "steelmanning",
        "fermi-estimation",
        "trade-off-matrix",
        "decomposition",
        "inversion",
        "abstraction-laddering",
        "constraint-relaxation",
        "assumption-surfacing",
        "adversarial-thinking",
        "time-horizon-shifting",
        "impact-effort-grid",
        "opportunity-cost",
    ];
    /// The six tags the specification's `list_models` filters by (its `tag`
    /// enum): each must exist.
    const SEED_TAGS: [&str; 6] = [
        "debugging",
        "planning",
        "decision-making",
        "risk-management",
        "problem-solving",
        "analysis",
    ];

    #[test]
    fn catalog_and_prompts_agree() {
        let c = catalog();
        let file: CatalogFile = serde_json::from_str(CATALOG_JSON).unwrap();
        assert_eq!(
            c.models.len(),
            file.models.len(),
            "every catalog model has a prompt file"
        );
        assert_eq!(CONTENT.len(), c.models.len(), "every prompt file is in the catalog");
        let mut names = names();
        names.sort();
        let mut seed = SEED_MODELS.to_vec();
        seed.sort();
        assert_eq!(names, seed);
        for m in &c.models {
            assert!(!m.name.is_empty() && m.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
            assert!(!m.title.is_empty() && !m.description.is_empty());
            let len = m.content.len();
            assert!((1536..=4096).contains(&len), "{} is {len} bytes", m.name);
            assert!(m.content.starts_with(&format!("# {}", m.title)), "{}", m.name);
            for section in ["## When to use", "## Steps", "## Worked example", "## Pitfalls"] {
                assert!(m.content.contains(section), "{} lacks {section}", m.name);
            }
            for t in &m.tags {
                assert!(tag_names().contains(&t.as_str()), "{} has undefined tag {t}", m.name);
            }
        }
    }

    #[test]
    fn every_tag_is_described_and_used_twice() {
        for t in SEED_TAGS {
            assert!(tag_names().contains(&t), "missing tag {t}");
        }
        for t in &catalog().tags {
            assert!(!t.description.is_empty());
            let n = with_tags("tag", std::slice::from_ref(&t.name)).unwrap().len();
            assert!(n >= 2, "tag {} has {n} models", t.name);
        }
    }

    #[test]
    fn lookups() {
        assert_eq!(require("modelId", "five-whys").unwrap().title, "Five Whys");
        for other in ["Five Whys", "five_whys", "FIVE-WHYS", " five whys "] {
            assert_eq!(require("modelId", other).unwrap().name, "five-whys", "{other}");
        }
        let e = require("modelId", "six-whys").unwrap_err();
        assert_eq!(e.code(), "INVALID_PAYLOAD");
        assert_eq!(e.details().unwrap()["validModels"].as_array().unwrap().len(), 15);
        let both = with_tags("tags", &["debugging".into(), "analysis".into()]).unwrap();
        assert!(
            both.iter()
                .all(|m| m.tags.contains(&"debugging".into()) && m.tags.contains(&"analysis".into()))
        );
        assert_eq!(with_tags("tags", &[]).unwrap().len(), 15);
        assert!(with_tags("tag", &["nope".into()]).is_err());
    }
}
