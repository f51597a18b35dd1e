//! The cells a new notebook starts with: `blank` (a title and the
//! package.json cell) and `sequential-feynman`, our guide to the Feynman
//! technique in phases. `{name}` and `{date}` in a template's text take the
//! notebook's name and the day it is created (UTC).

use super::{Language, NewCell, default_package_json};

/// The templates of `notebook create`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Template {
    #[default]
    Blank,
    SequentialFeynman,
}

impl Template {
    pub const NAMES: &'static [&'static str] = &["blank", "sequential-feynman"];

    pub fn parse(s: &str) -> Option<Template> {
        match s.trim() {
            "blank" => Some(Template::Blank),
            "sequential-feynman" => Some(Template::SequentialFeynman),
            _ => None,
        }
    }
}

/// The phases of the Feynman template: a heading and what to do in it.
const FEYNMAN: &[&str] = &[
    "## Phase 1: name the idea\n\nWhat do you want to understand about **{name}**? Write it as one question you \
     cannot answer yet, and note what you believe the answer is today ({date}).",
    "## Phase 2: explain it plainly\n\nExplain {name} as you would to someone new to the field: short sentences, \
     no jargon you could not define, one example. Do not look anything up yet.",
    "## Phase 3: find the gaps\n\nRead your explanation back. Mark each step you skipped, each word you used \
     without being able to define it, and each claim you could not check. Those are the gaps.",
    "## Phase 4: test a claim\n\nPick the claim you are least sure of and check it with code in the next cell: \
     say first what output you expect, then run it.",
    "## Phase 5: simplify\n\nRewrite the explanation with what the gaps and the test taught you, shorter than \
     before. Find one analogy that holds, and say where it stops holding.",
    "## Phase 6: review\n\nWhat changed between Phase 1 and now? What would you test next, and what would \
     change your mind?",
];

/// The check cell of the Feynman template, before Phase 5.
const FEYNMAN_CHECK: &str = "// Phase 4: the claim you test, and the output you expect.\n\
     const expected = 'write the output you expect here';\n\
     const actual = expected; // replace with the computation that checks the claim\n\
     console.log({ expected, actual, holds: expected === actual });\n";

/// The cells of `template` for a notebook named `name` in `language`,
/// created on `date` (`YYYY-MM-DD`).
pub fn template_cells(template: Template, name: &str, language: Language, date: &str) -> Vec<NewCell> {
    let fill = |text: &str| text.replace("{name}", name).replace("{date}", date);
    let mut cells = vec![
        NewCell::title(name),
        NewCell::package_json(default_package_json(language)),
    ];
    if template == Template::SequentialFeynman {
        cells[0] = NewCell::title(format!("Feynman: {name}"));
        for (i, phase) in FEYNMAN.iter().enumerate() {
            cells.push(NewCell::markdown(fill(phase)));
            if i == 3 {
                cells.push(NewCell::code(
                    format!("check.{}", language.extension()),
                    language,
                    FEYNMAN_CHECK,
                ));
            }
        }
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notebook::CellKind;

    #[test]
    fn the_feynman_template_takes_the_name_and_date() {
        let cells = template_cells(
            Template::SequentialFeynman,
            "Ownership",
            Language::TypeScript,
            "2026-12-07",
        );
        assert_eq!(cells[0].content, "Feynman: Ownership");
        assert_eq!(cells[1].kind, CellKind::PackageJson);
        let text: String = cells.iter().map(|c| c.content.as_str()).collect();
        assert!(text.contains("**Ownership**") && text.contains("2026-12-07"));
        assert!(!text.contains("{name}") && !text.contains("{date}"));
        let code: Vec<_> = cells.iter().filter(|c| c.kind == CellKind::Code).collect();
        assert_eq!(code.len(), 1);
        assert_eq!(code[0].filename.as_deref(), Some("check.ts"));
        for c in cells {
            c.checked().unwrap();
        }
        assert_eq!(template_cells(Template::Blank, "x", Language::JavaScript, "d").len(), 2);
    }
}
