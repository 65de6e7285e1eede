//! Binding is process-wide, so the not-found case has a test binary of its own: nothing here binds
//! the real library first.

use std::path::Path;

use deepread_pdf::{bind_pdfium, Document, PdfError, PDFIUM_ENV};

#[test]
fn a_missing_library_says_where_it_looked_and_how_to_fix_it() {
    let explicit = Path::new("/nonexistent/explicit/libpdfium.so");
    let from_env = "/nonexistent/from-env";
    // The only test in this binary, so no other thread reads the environment meanwhile.
    std::env::set_var(PDFIUM_ENV, from_env);

    let error = bind_pdfium(Some(explicit)).unwrap_err();
    let PdfError::PdfiumNotFound { searched } = &error else {
        panic!("expected PdfiumNotFound, got {error:?}");
    };
    let exe_dir = std::env::current_exe().unwrap();
    let exe_dir = exe_dir.parent().unwrap().to_str().unwrap();
    let message = error.to_string();
    // The installed package's copy: /usr/bin/../lib/DeepRead/pdfium for a .deb.
    let packaged = format!("{exe_dir}/../lib/DeepRead/pdfium/libpdfium.so");
    for place in [
        explicit.to_str().unwrap(),
        from_env,
        exe_dir,
        &packaged,
        "system library",
    ] {
        assert!(message.contains(place), "{place} missing from:\n{message}");
    }
    assert_eq!(searched.len(), 5, "{searched:?}");
    assert!(message.contains("make deps") && message.contains(PDFIUM_ENV));

    // Lazy binding on first use reports the same.
    let bytes = b"%PDF-1.4\n".to_vec();
    assert!(matches!(
        Document::from_bytes(bytes, None),
        Err(PdfError::PdfiumNotFound { .. })
    ));
}
