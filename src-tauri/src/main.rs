//! The DeepRead desktop shell: Tauri commands, the page image protocol, and the window.
//! Business logic lives in the crates; this binary only connects them to the webview.

// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod coalesce;
mod commands;
mod corrections;
mod dropped;
mod engine_settings;
mod export_command;
mod keyring;
mod library;
mod model_download;
mod page_protocol;
mod pdf_passwords;
mod reading;
mod region_command;
mod remote_engine;

use std::path::PathBuf;

use anyhow::Context;
use library::Library;
use reading::Readings;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,deepread=debug".into()),
        )
        .init();

    let launch_paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();

    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(Library::new(launch_paths))
        .manage(Readings::new())
        .manage(model_download::ModelDownload::default())
        .manage(export_command::ChosenFolders::default())
        .register_asynchronous_uri_scheme_protocol(page_protocol::SCHEME, page_protocol::serve)
        .invoke_handler(tauri::generate_handler![
            commands::launch_paths,
            commands::documents_in,
            commands::open_document,
            commands::forget_pdf_password,
            commands::read_document,
            commands::engine_status,
            commands::recent_documents,
            commands::stop_reading,
            commands::render_markdown,
            commands::notices,
            export_command::export_document,
            corrections::commands::correct_block,
            corrections::commands::forget_correction,
            corrections::commands::add_block,
            region_command::read_region,
            commands::download_model,
            commands::cancel_model_download,
            commands::engine_settings,
            commands::save_engine_settings,
            commands::test_connection,
        ])
        .run(tauri::generate_context!("../tauri.conf.json"))
        .context("the DeepRead window could not start")
}
