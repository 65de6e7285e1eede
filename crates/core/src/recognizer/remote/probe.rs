//! A connection test: asks the server which models it serves (`GET {base}/models`), so that a wrong
//! address, a missing key or a model the server does not have shows before any page is sent.

use serde::Deserialize;

use super::client::{agent, with_key};
use super::endpoint::Endpoint;
use super::fault::{self, RemoteError};
use super::{RemoteSettings, Timeouts};

/// The most of a model list that is read: vLLM's entry is a few hundred bytes a model.
const MODEL_LIST_LIMIT: u64 = 1024 * 1024;

/// The OpenAI shape: `{"object": "list", "data": [{"id": "…", …}, …]}`.
#[derive(Deserialize)]
struct ModelList {
    data: Vec<ModelEntry>,
}

#[derive(Deserialize)]
struct ModelEntry {
    id: String,
}

/// The ids of the models `settings`' server serves, in its order. Sends the API key when there is one,
/// and waits no longer than the connect timeout at any step: a list of models is answered at once by
/// a server that is up, however busy it is with pages.
pub fn list_models(settings: &RemoteSettings) -> Result<Vec<String>, RemoteError> {
    let endpoint = Endpoint::parse(&settings.endpoint, settings.allow_plain_http)?;
    let timeouts = Timeouts {
        connect: settings.timeouts.connect,
        idle: settings.timeouts.connect,
    };
    let request = agent(&timeouts)
        .get(endpoint.models())
        .header("Accept", "application/json");
    let mut response = with_key(request, settings.api_key.as_deref())
        .call()
        .map_err(|e| fault::transport(endpoint.as_str(), e, &timeouts))?;
    if !response.status().is_success() {
        return Err(fault::status(endpoint.as_str(), &mut response));
    }
    let body = response
        .body_mut()
        .with_config()
        .limit(MODEL_LIST_LIMIT)
        .read_to_vec()
        .map_err(|e| fault::transport(endpoint.as_str(), e, &timeouts))?;
    let list: ModelList = serde_json::from_slice(&body).map_err(|e| RemoteError::NotModelList {
        endpoint: endpoint.to_string(),
        detail: not_a_list(&body, &e),
    })?;
    Ok(list.data.into_iter().map(|model| model.id).collect())
}

/// What the reply was instead: JSON of another shape, or a glimpse of what is not JSON (an HTML page
/// from a proxy or a web server at that address, say).
fn not_a_list(body: &[u8], error: &serde_json::Error) -> String {
    if error.is_data() {
        return format!("the JSON has no data list of models with ids ({error})");
    }
    let text = fault::server_message(&String::from_utf8_lossy(body));
    format!("the reply is not JSON: {text}")
}
