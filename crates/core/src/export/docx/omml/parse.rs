//! LaTeX read into the parts of a formula: atoms with their scripts, fractions, roots, big operators,
//! delimiters, accents, environments of rows and cells.

use super::symbols::{accent, is_function_name, nary_symbol, symbol};

/// The items of a formula's LaTeX (its delimiters taken off).
pub(super) fn formula(latex: &str) -> Vec<Item> {
    let mut parser = Parser {
        tokens: tokenize(latex),
        at: 0,
    };
    parser.items(Stop::End)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// `\name`, or `\` and one non-letter (`\,`, `\{`, `\\`).
    Command(String),
    Open,
    Close,
    Sup,
    Sub,
    Align,
    /// White space: nothing in math, a space in `\text{…}`.
    Space,
    Char(char),
}

fn tokenize(latex: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = latex.chars().peekable();
    while let Some(c) = chars.next() {
        tokens.push(match c {
            '\\' => {
                let mut name = String::new();
                while let Some(&next) = chars.peek() {
                    if !next.is_ascii_alphabetic() {
                        break;
                    }
                    name.push(next);
                    chars.next();
                }
                if name.is_empty() {
                    name.extend(chars.next());
                }
                Token::Command(name)
            }
            '{' => Token::Open,
            '}' => Token::Close,
            '^' => Token::Sup,
            '_' => Token::Sub,
            '&' => Token::Align,
            c if c.is_whitespace() => {
                if tokens.last() == Some(&Token::Space) {
                    continue;
                }
                Token::Space
            }
            c => Token::Char(c),
        });
    }
    tokens
}

/// What a formula is made of, as OMML has it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Item {
    /// Text; `plain` is upright (names, `\text`), else the math italic of letters.
    Run {
        text: String,
        style: Style,
    },
    Scripts {
        base: Vec<Item>,
        sub: Option<Vec<Item>>,
        sup: Option<Vec<Item>>,
    },
    Fraction {
        num: Vec<Item>,
        den: Vec<Item>,
    },
    Root {
        degree: Option<Vec<Item>>,
        radicand: Vec<Item>,
    },
    /// A big operator (∑, ∫), its limits, and what it applies to.
    Nary {
        symbol: char,
        sub: Option<Vec<Item>>,
        sup: Option<Vec<Item>>,
    },
    Delimited {
        open: String,
        close: String,
        inner: Vec<Item>,
    },
    Accent {
        mark: char,
        base: Vec<Item>,
    },
    Bar {
        base: Vec<Item>,
    },
    Matrix {
        rows: Vec<Vec<Vec<Item>>>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Style {
    /// Letters in math italic.
    Math,
    /// Upright: digits, signs, function names.
    Plain,
    Bold,
    /// Words (`\text{…}`): set as text, its spaces kept.
    Text,
}

/// Where a run of items ends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stop {
    End,
    Group,
    Right,
    /// `\end{…}`, or a cell's `&`, or a row's `\\`.
    Cell,
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    /// Spaces in math are TeX's to set, not the writer's.
    fn skip_spaces(&mut self) {
        while self.peek() == Some(&Token::Space) {
            self.at += 1;
        }
    }

    fn items(&mut self, stop: Stop) -> Vec<Item> {
        let mut items = Vec::new();
        loop {
            self.skip_spaces();
            let Some(token) = self.peek() else { break };
            let ends = match (stop, token) {
                (Stop::Group, Token::Close) => true,
                (Stop::Right, Token::Command(c)) => c == "right",
                (Stop::Cell, Token::Align) => true,
                (Stop::Cell, Token::Command(c)) => c == "\\" || c == "end",
                _ => false,
            };
            if ends {
                break;
            }
            items.extend(self.item());
        }
        items
    }

    /// One atom with its scripts.
    fn item(&mut self) -> Option<Item> {
        let atom = self.atom()?;
        let (sub, sup) = self.scripts();
        if sub.is_none() && sup.is_none() {
            return Some(atom);
        }
        Some(match atom {
            Item::Nary { symbol, .. } => Item::Nary { symbol, sub, sup },
            base => Item::Scripts {
                base: vec![base],
                sub,
                sup,
            },
        })
    }

    fn scripts(&mut self) -> (Option<Vec<Item>>, Option<Vec<Item>>) {
        let (mut sub, mut sup) = (None, None);
        loop {
            self.skip_spaces();
            match self.peek() {
                Some(Token::Sub) if sub.is_none() => {
                    self.next();
                    sub = Some(self.argument());
                }
                Some(Token::Sup) if sup.is_none() => {
                    self.next();
                    sup = Some(self.argument());
                }
                Some(Token::Char('\'')) if sup.is_none() => {
                    self.next();
                    sup = Some(vec![run("′", Style::Math)]);
                }
                _ => return (sub, sup),
            }
        }
    }

    /// A group `{…}`, or the one atom that follows.
    fn argument(&mut self) -> Vec<Item> {
        self.skip_spaces();
        match self.peek() {
            Some(Token::Open) => {
                self.next();
                let items = self.items(Stop::Group);
                self.next();
                items
            }
            _ => self.atom().into_iter().collect(),
        }
    }

    /// The text of a group, as written (`\text{…}`, `\begin{…}`).
    fn raw_group(&mut self) -> String {
        let mut text = String::new();
        self.skip_spaces();
        if self.peek() != Some(&Token::Open) {
            return text;
        }
        self.next();
        let mut depth = 0;
        while let Some(token) = self.next() {
            match token {
                Token::Close if depth == 0 => break,
                Token::Close => depth -= 1,
                Token::Open => depth += 1,
                _ => {}
            }
            text.push_str(&source_of(&token));
        }
        text
    }

    fn atom(&mut self) -> Option<Item> {
        self.skip_spaces();
        match self.next()? {
            Token::Open => {
                let items = self.items(Stop::Group);
                self.next();
                Some(group(items))
            }
            Token::Char(c) => Some(run(&c.to_string(), char_style(c))),
            Token::Command(name) => self.command(&name),
            // A stray `}`, `&`, `^` or `_` (unbalanced input): kept as text.
            other => Some(run(&source_of(&other), Style::Math)),
        }
    }

    fn command(&mut self, name: &str) -> Option<Item> {
        if let Some(symbol) = nary_symbol(name) {
            return Some(Item::Nary {
                symbol,
                sub: None,
                sup: None,
            });
        }
        if let Some(text) = symbol(name) {
            return Some(run(text, Style::Math));
        }
        if let Some(mark) = accent(name) {
            let base = self.argument();
            return Some(Item::Accent { mark, base });
        }
        Some(match name {
            "frac" | "dfrac" | "tfrac" | "cfrac" => {
                let num = self.argument();
                let den = self.argument();
                Item::Fraction { num, den }
            }
            "sqrt" => {
                let degree = self.optional_argument();
                let radicand = self.argument();
                Item::Root { degree, radicand }
            }
            "left" => self.delimited(),
            "overline" => Item::Bar {
                base: self.argument(),
            },
            "text" | "textrm" | "mbox" => run(&self.raw_group(), Style::Text),
            "mathrm" | "operatorname" => run(&self.raw_group(), Style::Plain),
            "mathbf" | "textbf" | "boldsymbol" => run(&self.raw_group(), Style::Bold),
            "mathit" | "mathsf" | "mathcal" | "mathbb" | "mathtt" => group(self.argument()),
            "begin" => self.environment(),
            // Spacing and sizing the typesetter decides.
            "," | ";" | ":" | "!" | " " | "quad" | "qquad" | "displaystyle" | "textstyle"
            | "limits" | "nolimits" | "big" | "Big" | "bigg" | "Bigg" => return None,
            "{" | "}" | "%" | "$" | "#" | "&" | "_" => run(name, Style::Math),
            name if is_function_name(name) => run(name, Style::Plain),
            // Unknown: as written, so the reader still sees what the model wrote.
            name => run(&format!("\\{name}"), Style::Plain),
        })
    }

    /// `[…]` after `\sqrt`.
    fn optional_argument(&mut self) -> Option<Vec<Item>> {
        self.skip_spaces();
        if self.peek() != Some(&Token::Char('[')) {
            return None;
        }
        self.next();
        let mut items = Vec::new();
        while let Some(token) = self.peek() {
            if *token == Token::Char(']') {
                self.next();
                break;
            }
            items.extend(self.item());
        }
        Some(items)
    }

    /// `\left( … \right)`.
    fn delimited(&mut self) -> Item {
        let open = self.delimiter();
        let inner = self.items(Stop::Right);
        self.next(); // \right
        let close = self.delimiter();
        Item::Delimited { open, close, inner }
    }

    fn delimiter(&mut self) -> String {
        self.skip_spaces();
        match self.next() {
            Some(Token::Char('.')) | None => String::new(),
            Some(Token::Char(c)) => c.to_string(),
            Some(Token::Command(name)) => match name.as_str() {
                "{" | "lbrace" => "{".into(),
                "}" | "rbrace" => "}".into(),
                "langle" => "⟨".into(),
                "rangle" => "⟩".into(),
                "|" | "Vert" => "‖".into(),
                "lfloor" => "⌊".into(),
                "rfloor" => "⌋".into(),
                "lceil" => "⌈".into(),
                "rceil" => "⌉".into(),
                other => other.into(),
            },
            Some(other) => source_of(&other),
        }
    }

    /// `\begin{matrix}` and its kin, `cases`, `aligned`: rows of cells.
    fn environment(&mut self) -> Item {
        let name = self.raw_group();
        if name == "array" {
            self.raw_group(); // the column spec
        }
        let mut rows = vec![vec![]];
        loop {
            let cell = self.items(Stop::Cell);
            rows.last_mut().unwrap().push(cell);
            match self.next() {
                Some(Token::Align) => {}
                Some(Token::Command(c)) if c == "\\" => rows.push(vec![]),
                Some(Token::Command(c)) if c == "end" => {
                    self.raw_group();
                    break;
                }
                _ => break,
            }
        }
        // A last `\\` before `\end` leaves an empty row.
        if rows.len() > 1 && rows.last().is_some_and(|r| r.iter().all(Vec::is_empty)) {
            rows.pop();
        }
        let matrix = Item::Matrix { rows };
        let (open, close) = match name.trim_end_matches('*') {
            "pmatrix" => ("(", ")"),
            "bmatrix" => ("[", "]"),
            "Bmatrix" => ("{", "}"),
            "vmatrix" => ("|", "|"),
            "Vmatrix" => ("‖", "‖"),
            "cases" => ("{", ""),
            _ => return matrix,
        };
        Item::Delimited {
            open: open.into(),
            close: close.into(),
            inner: vec![matrix],
        }
    }
}

/// Items of a group, as one item.
fn group(mut items: Vec<Item>) -> Item {
    if items.len() == 1 {
        return items.remove(0);
    }
    Item::Delimited {
        open: String::new(),
        close: String::new(),
        inner: items,
    }
}

fn run(text: &str, style: Style) -> Item {
    Item::Run {
        text: text.to_owned(),
        style,
    }
}

/// Letters in math italic (as TeX sets them), digits and signs upright.
fn char_style(c: char) -> Style {
    if c.is_alphabetic() {
        Style::Math
    } else {
        Style::Plain
    }
}

fn source_of(token: &Token) -> String {
    match token {
        Token::Command(name) => format!("\\{name}"),
        Token::Open => "{".into(),
        Token::Close => "}".into(),
        Token::Sup => "^".into(),
        Token::Sub => "_".into(),
        Token::Align => "&".into(),
        Token::Space => " ".into(),
        Token::Char(c) => c.to_string(),
    }
}
