//! `--pages 1-5,9`: 1-based page ranges as people write them, to 0-based page indices.

/// Parses a page list; pages past the document's end are left to the caller to report.
pub fn parse_pages(text: &str) -> Result<Vec<usize>, String> {
    let mut pages = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (page_number(a)?, page_number(b)?),
            None => (page_number(part)?, page_number(part)?),
        };
        if last < first {
            return Err(format!("page range {part} runs backwards"));
        }
        for page in first - 1..last {
            if !pages.contains(&page) {
                pages.push(page);
            }
        }
    }
    if pages.is_empty() {
        return Err("no pages given".to_owned());
    }
    Ok(pages)
}

fn page_number(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("pages are numbered from 1".to_owned()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{text:?} is not a page number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_single_pages_become_zero_based_indices() {
        assert_eq!(parse_pages("1-3,9").unwrap(), [0, 1, 2, 8]);
        assert_eq!(parse_pages("2, 2-3").unwrap(), [1, 2]);
    }

    #[test]
    fn nonsense_is_refused_with_a_reason() {
        assert!(parse_pages("0").unwrap_err().contains("from 1"));
        assert!(parse_pages("5-2").unwrap_err().contains("backwards"));
        assert!(parse_pages("x").unwrap_err().contains("not a page number"));
        assert!(parse_pages("").is_err());
    }
}
