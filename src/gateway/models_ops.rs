//! The `mental_models` operation: get_model, list_models, list_tags.

use serde_json::{Value, json};

use super::answers::models::{ModelAnswer, ModelListAnswer, ModelSummary, ModelTag, ModelTagsAnswer};
use super::{Args, Gateway, answers, params};
use crate::domain::Stage;
use crate::error::{Error, Result};
use crate::models;

pub async fn mental_models(gw: &Gateway, args: Args) -> Result<Value> {
    let (name, args) = args.sub_operation("models")?;
    let name = super::refused::required_sub_operation("mental_models", name)?;
    let out = match name.as_str() {
        "get_model" => get_model(&args),
        "list_models" => list_models(&args),
        "list_tags" => {
            let _: params::ListModelTags = args.parse("mental_models.list_tags")?;
            let tags: Vec<ModelTag> = models::catalog()
                .tags
                .iter()
                .map(|tag| ModelTag {
                    tag,
                    model_count: models::catalog()
                        .models
                        .iter()
                        .filter(|m| m.tags.contains(&tag.name))
                        .count(),
                })
                .collect();
            answers::to_value(&ModelTagsAnswer {
                count: tags.len(),
                tags,
            })
        }
        other => Err(super::refused::unknown_sub_operation("mental_models", other)),
    }?;
    // Applying a reasoning framework is a domain operation: a connection that
    // has loaded the cipher reaches stage 3 (informational; nothing requires it).
    if name == "get_model" && gw.stage() >= Stage::CipherLoaded {
        gw.advance(Stage::DomainActive, "mental_models get_model");
    }
    Ok(out)
}

fn get_model(args: &Args) -> Result<Value> {
    let named = |args: &Args| ["modelId", "model", "name"].iter().any(|k| args.get(k).is_some());
    let p: params::GetModel = args.parse("mental_models.get_model").map_err(|e| match e {
        // No model named: said with the models there are.
        Error::InvalidPayload { ref field, .. } if field == "modelId" && !named(args) => Error::invalid_with(
            "modelId",
            format!("get_model needs modelId: one of {}", models::names().join(", ")),
            json!({ "validModels": models::names() }),
        ),
        other => other,
    })?;
    // An unknown name is said on the name it was given under.
    let field = if args.get("modelId").is_some() {
        "modelId"
    } else {
        "model"
    };
    let model = models::require(field, p.model_id.trim())?;
    answers::to_value(&ModelAnswer {
        model,
        uri: models::uri(&model.name),
    })
}

/// `tag` (one) and `tags` (all must match) combine; `filter` answers the tag
/// filter as a string (tags joined with ",") or null.
fn list_models(args: &Args) -> Result<Value> {
    let p: params::ListModels = args.parse("mental_models.list_models")?;
    let mut tags: Vec<String> = Vec::new();
    let mut field = "tags";
    if let Some(t) = p.tag {
        field = "tag";
        tags.push(t.trim().to_string());
    }
    for t in p.tags.unwrap_or_default() {
        let t = t.trim().to_string();
        if !tags.contains(&t) {
            tags.push(t);
        }
    }
    let found = models::with_tags(field, &tags)?;
    let models: Vec<ModelSummary> = found.into_iter().map(ModelSummary::from).collect();
    answers::to_value(&ModelListAnswer {
        count: models.len(),
        models,
        filter: (!tags.is_empty()).then(|| tags.join(",")),
    })
}
