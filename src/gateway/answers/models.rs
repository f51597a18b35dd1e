//! The answers of `mental_models`: the catalog is static, so they borrow it.

use serde::Serialize;

use crate::models::{MentalModel, TagDefinition};

/// `get_model`: the model, its prompt and its resource URI.
#[derive(Debug, Serialize)]
pub(crate) struct ModelAnswer {
    #[serde(flatten)]
    pub model: &'static MentalModel,
    pub uri: String,
}

/// `list_models`.
#[derive(Debug, Serialize)]
pub(crate) struct ModelListAnswer {
    pub models: Vec<ModelSummary>,
    pub count: usize,
    /// The tags filtered on, joined with `,`; `null` for none.
    pub filter: Option<String>,
}

/// A model without its prompt, which `get_model` gives.
#[derive(Debug, Serialize)]
pub(crate) struct ModelSummary {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub tags: &'static [String],
}

impl From<&'static MentalModel> for ModelSummary {
    fn from(m: &'static MentalModel) -> ModelSummary {
        ModelSummary {
            name: &m.name,
            title: &m.title,
            description: &m.description,
            tags: &m.tags,
        }
    }
}

/// `list_tags`.
#[derive(Debug, Serialize)]
pub(crate) struct ModelTagsAnswer {
    pub count: usize,
    pub tags: Vec<ModelTag>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelTag {
    #[serde(flatten)]
    pub tag: &'static TagDefinition,
    /// How many models carry the tag.
    pub model_count: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::answers::to_value;

    fn keys(v: &serde_json::Value) -> Vec<&str> {
        let mut keys: Vec<&str> = v.as_object().into_iter().flatten().map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        keys
    }

    #[test]
    fn a_model_has_its_prompt_and_uri_and_a_summary_neither() {
        let model = crate::models::get("five-whys").unwrap();
        let whole = to_value(&ModelAnswer {
            model,
            uri: crate::models::uri(&model.name),
        })
        .unwrap();
        assert_eq!(keys(&whole), ["content", "description", "name", "tags", "title", "uri"]);
        let summary = to_value(&ModelSummary::from(model)).unwrap();
        assert_eq!(keys(&summary), ["description", "name", "tags", "title"]);
        let tag = to_value(&ModelTag {
            tag: &crate::models::catalog().tags[0],
            model_count: 2,
        })
        .unwrap();
        assert_eq!(keys(&tag), ["description", "modelCount", "name"]);
    }
}
