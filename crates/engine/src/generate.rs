//! Greedy decoding rules: stop conditions and the two no-repeat n-gram bans of the references (spec §5).

/// Repetition control. Both forms follow their reference exactly.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NoRepeatNgram {
    #[default]
    Off,
    /// The official vLLM `NoRepeatNGramLogitsProcessor(ngram_size, window_size, whitelist)`, which vLLM feeds the
    /// GENERATED tokens only: ban every token that would complete an `n`-gram already seen among the last
    /// `window` generated tokens, except the whitelisted ones. Official settings: (20, 90) for images,
    /// (20, 50) for PDFs, whitelist `<td>`, `</td>` = {128821, 128822}.
    Windowed {
        n: usize,
        window: usize,
        whitelist: Vec<u32>,
    },
    /// transformers' `no_repeat_ngram_size=n` (the HF `infer` path, n = 20): over the whole sequence, prompt
    /// (image placeholders included) plus generated tokens, no window, no whitelist.
    FullHistory { n: usize },
}

impl NoRepeatNgram {
    /// The official vLLM image-script setting.
    pub fn official_image() -> Self {
        Self::Windowed {
            n: 20,
            window: 90,
            whitelist: vec![128821, 128822],
        }
    }

    /// Tokens banned at the next step, given the prompt and the tokens generated so far.
    pub fn banned(&self, prompt: &[u32], generated: &[u32]) -> Vec<u32> {
        match self {
            Self::Off => Vec::new(),
            Self::Windowed {
                n,
                window,
                whitelist,
            } => {
                let mut banned = windowed_ngram_bans(generated, *n, *window);
                banned.retain(|t| !whitelist.contains(t));
                banned
            }
            Self::FullHistory { n } => {
                let all: Vec<u32> = prompt.iter().chain(generated).copied().collect();
                full_history_ngram_bans(&all, *n)
            }
        }
    }
}

/// vLLM form over `ids` (the generated tokens): for `i` in `max(0, len − window) ..= len − n`, when
/// `ids[i..i+n−1]` equals the last `n − 1` tokens, ban `ids[i+n−1]`. Nothing is banned before `n` tokens exist.
/// With n = 1 the reference's prefix slice `ids[-0:]` is the whole list, which never matches: nothing is banned.
pub fn windowed_ngram_bans(ids: &[u32], n: usize, window: usize) -> Vec<u32> {
    let len = ids.len();
    if n < 2 || len < n {
        return Vec::new();
    }
    let prefix = &ids[len - (n - 1)..];
    let mut banned = Vec::new();
    for i in len.saturating_sub(window)..=len - n {
        if &ids[i..i + n - 1] == prefix && !banned.contains(&ids[i + n - 1]) {
            banned.push(ids[i + n - 1]);
        }
    }
    banned
}

/// transformers' `NoRepeatNGramLogitsProcessor` over `ids` (prompt + generated): once `len + 1 >= n`, ban every
/// token `t` such that (last `n − 1` tokens, `t`) already occurred anywhere.
pub fn full_history_ngram_bans(ids: &[u32], n: usize) -> Vec<u32> {
    let len = ids.len();
    // With len = n − 1 the rule is active but no n-gram exists yet.
    if n == 0 || len < n {
        return Vec::new();
    }
    let prefix = &ids[len + 1 - n..];
    let mut banned = Vec::new();
    for i in 0..=len - n {
        if &ids[i..i + n - 1] == prefix && !banned.contains(&ids[i + n - 1]) {
            banned.push(ids[i + n - 1]);
        }
    }
    banned
}

/// The greedy choice: the first index of the largest logit among the tokens not banned (torch.argmax order).
/// Returns None when every token is banned.
pub fn greedy_pick(logits: &[f32], banned: &[u32]) -> Option<u32> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &v) in logits.iter().enumerate() {
        if banned.contains(&(i as u32)) || v.is_nan() {
            continue;
        }
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i as u32)
}

/// Settings of one [`crate::engine::Engine::generate`] call.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// Stop after this many generated tokens (the EOS token counts). Reference: 8192.
    pub max_new_tokens: usize,
    /// Stop token; `None` takes the config's `eos_token_id` (1 for DeepSeek-OCR-2).
    pub eos_token_id: Option<u32>,
    pub no_repeat_ngram: NoRepeatNgram,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self {
            max_new_tokens: 8192,
            eos_token_id: None,
            no_repeat_ngram: NoRepeatNgram::official_image(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windowed_ban_looks_only_inside_the_window() {
        // "1 2 3 … 1 2": 3 follows "1 2" at the start.
        let ids = [1, 2, 3, 9, 9, 9, 1, 2];
        assert_eq!(windowed_ngram_bans(&ids, 3, 90), vec![3]);
        // A window of 6 starts at index 2 and no longer sees "1 2 3".
        assert_eq!(windowed_ngram_bans(&ids, 3, 6), Vec::<u32>::new());
        assert_eq!(windowed_ngram_bans(&ids[..2], 3, 90), Vec::<u32>::new());
    }

    #[test]
    fn whitelist_survives_the_windowed_ban() {
        let rule = NoRepeatNgram::Windowed {
            n: 2,
            window: 90,
            whitelist: vec![7],
        };
        assert_eq!(rule.banned(&[], &[5, 7, 5, 8, 5]), vec![8]);
    }

    #[test]
    fn full_history_ban_includes_the_prompt() {
        let rule = NoRepeatNgram::FullHistory { n: 3 };
        // The prompt holds "4 4 4" and "4 4 2": after generating "4 4", both 4 and 2 are banned.
        assert_eq!(rule.banned(&[0, 4, 4, 4, 2], &[4, 4]), vec![4, 2]);
        assert_eq!(
            NoRepeatNgram::Windowed {
                n: 3,
                window: 90,
                whitelist: vec![]
            }
            .banned(&[0, 4, 4, 4, 2], &[4, 4]),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn greedy_skips_banned_and_keeps_first_maximum() {
        assert_eq!(greedy_pick(&[1.0, 3.0, 3.0, 2.0], &[]), Some(1));
        assert_eq!(greedy_pick(&[1.0, 3.0, 3.0, 2.0], &[1]), Some(2));
        assert_eq!(greedy_pick(&[1.0], &[0]), None);
    }
}
