//! The connection test (`list_models`) against the fake server: the models it lists, the key it is
//! sent, and each way a server can fail to answer, in words that name it.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use deepread_core::recognizer::remote::{list_models, Timeouts};
use deepread_core::recognizer::{RemoteError, RemoteSettings};

use crate::support::{closed_port, FakeServer, Reply};
use crate::MODEL;

fn probe_settings(url: &str) -> RemoteSettings {
    RemoteSettings {
        timeouts: Timeouts {
            connect: Duration::from_millis(500),
            idle: Duration::from_secs(30),
        },
        ..RemoteSettings::new(url, MODEL)
    }
}

fn no_pages() -> FakeServer {
    FakeServer::start(Vec::new(), |_| Reply::status(500, "no pages here"))
}

#[test]
fn the_models_a_server_serves_are_listed_in_its_order_and_the_key_is_sent() {
    let server = no_pages();
    server.answer_models(Reply::models(&["other/model", MODEL]));
    let settings = RemoteSettings {
        api_key: Some("sk-probe".into()),
        ..probe_settings(&server.url)
    };
    assert_eq!(
        list_models(&settings).unwrap(),
        vec!["other/model".to_owned(), MODEL.to_owned()]
    );
    // Without a key, no Authorization header at all.
    list_models(&probe_settings(&server.url)).unwrap();
    assert_eq!(
        server.models_asked(),
        vec![Some("Bearer sk-probe".to_owned()), None]
    );
    assert!(server.seen().is_empty(), "no page was sent");
}

#[test]
fn a_refused_key_says_the_server_wants_one_in_its_own_words() {
    let server = no_pages();
    server.answer_models(Reply::status(
        401,
        r#"{"error":{"message":"Invalid API key","type":"Unauthorized","code":401}}"#,
    ));
    let error = list_models(&probe_settings(&server.url)).unwrap_err();
    assert!(
        matches!(error, RemoteError::Http { status: 401, .. }),
        "{error:?}"
    );
    let message = error.to_string();
    for said in [server.url.as_str(), "401", "API key", "Invalid API key"] {
        assert!(message.contains(said), "{said} in {message}");
    }
}

#[test]
fn a_port_nobody_listens_on_is_a_refused_connection_naming_the_server() {
    let url = format!("http://127.0.0.1:{}/v1", closed_port());
    let error = list_models(&probe_settings(&url)).unwrap_err();
    assert!(matches!(error, RemoteError::Refused { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&url), "{message}");
    assert!(message.contains("refused the connection"), "{message}");
}

#[test]
fn a_server_that_never_answers_times_out_after_the_connect_timeout() {
    // Connections are accepted by the kernel into the backlog, and nobody ever reads them.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", silent.local_addr().unwrap());
    let started = Instant::now();
    let error = list_models(&probe_settings(&url)).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(error, RemoteError::Timeout { .. }), "{error:?}");
    assert!(error.to_string().contains("within 0.5 s"), "{error}");
}

#[test]
fn what_is_not_a_model_list_is_told_apart_from_json_of_another_shape() {
    let server = no_pages();
    server.answer_models(Reply::status(
        200,
        "<html><body>Welcome to nginx!</body></html>",
    ));
    let error = list_models(&probe_settings(&server.url)).unwrap_err();
    assert!(
        matches!(error, RemoteError::NotModelList { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("not JSON"), "{message}");
    assert!(message.contains("Welcome to nginx!"), "{message}");

    server.answer_models(Reply::status(200, r#"{"models":["a"]}"#));
    let message = list_models(&probe_settings(&server.url))
        .unwrap_err()
        .to_string();
    assert!(message.contains("no data list of models"), "{message}");
}

#[test]
fn an_address_that_is_no_server_is_refused_before_anything_is_sent() {
    let error = list_models(&probe_settings("gpu:8000")).unwrap_err();
    assert!(
        matches!(error, RemoteError::BadEndpoint { .. }),
        "{error:?}"
    );
    let error = list_models(&probe_settings("http://10.0.0.5:8000/v1")).unwrap_err();
    assert!(matches!(error, RemoteError::PlainHttp { .. }), "{error:?}");
}
