//! `hurray validate FILE [--permissive] [--json]`: every violation (up to
//! `--max-errors`), one a line, or one JSON object. Exit 0 when valid, 1 when not.
//! A violation about an element of a buffer opens with its byte offset from
//! the start of the file (`byte 392: ...`; `offset` in JSON), as decode
//! errors do.

use std::io::Write;
use std::path::Path;

use csf_validate::{Mode, Report, Violation};
use hurray_format::{Container, Descriptor};
use serde_json::json;

use crate::cli::ValidateArgs;
use crate::error::{Error, Result, EXIT_DATA, EXIT_OK, STDOUT};
use crate::files;
use crate::read::{self, at};

/// The rule id given to a file whose container framing does not decode.
pub const DECODE_RULE: &str = "decode";

/// Runs `validate` and returns the exit code.
pub fn run(args: &ValidateArgs) -> Result<i32> {
    let path = args.file.as_path();
    let input = files::open(path, true)?;
    let mode = if args.permissive { Mode::Permissive } else { Mode::Strict };
    let outcome = match Container::decode(&input) {
        Err(e) => Outcome::Decode(e),
        Ok(container) => {
            let report = csf_validate::report(&container, mode, args.max_errors as usize);
            let offsets = report.errors.iter().map(|v| v.offset(&container)).collect();
            Outcome::Checked(Box::new(Checked { descriptor: container.descriptor(), report, offsets }))
        }
    };
    let text = if args.json { json(args, &outcome) } else { text(args, &outcome) };
    std::io::stdout().lock().write_all(text.as_bytes()).map_err(|e| Error::io(Path::new(STDOUT), e))?;
    Ok(if outcome.is_valid() { EXIT_OK } else { EXIT_DATA })
}

enum Outcome {
    Decode(hurray_format::DecodeError),
    Checked(Box<Checked>),
}

/// A container that decoded, and what validation found.
struct Checked {
    descriptor: Descriptor,
    report: Report,
    /// Each error's byte offset in the file (`Violation::offset`), in report order.
    offsets: Vec<Option<u64>>,
}

impl Outcome {
    fn is_valid(&self) -> bool {
        matches!(self, Outcome::Checked(checked) if checked.report.is_valid())
    }
}

fn mode_name(args: &ValidateArgs) -> &'static str {
    if args.permissive {
        "permissive"
    } else {
        "strict"
    }
}

fn text(args: &ValidateArgs, outcome: &Outcome) -> String {
    let file = args.file.display();
    let mut o = String::new();
    match outcome {
        Outcome::Decode(e) => {
            let e = read::decode_message(e);
            o.push_str(&format!("{file}: error: {e} [{DECODE_RULE}; docs/format.md § 4-6]\n"));
            o.push_str(&format!("{file}: invalid: not a readable Hurray container\n"));
        }
        Outcome::Checked(checked) => {
            let Checked { descriptor: d, report, offsets } = &**checked;
            for (v, offset) in report.errors.iter().zip(offsets) {
                o.push_str(&format!("{file}: error: {}{v}\n", at(*offset)));
            }
            for w in &report.warnings {
                o.push_str(&format!("{file}: warning: {w}\n"));
            }
            let what = format!(
                "{}, {}, shape [{}], mode_order [{}], nnz {}",
                d.layout,
                d.element_type,
                d.shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
                d.mode_order.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
                d.nnz
            );
            if report.is_valid() {
                o.push_str(&format!("{file}: valid ({} validation; {what})\n", mode_name(args)));
            } else {
                let more = if report.truncated {
                    format!(" (stopped at --max-errors {}; there are more)", args.max_errors)
                } else {
                    String::new()
                };
                o.push_str(&format!(
                    "{file}: invalid: {} violation{}{more} ({} validation; {what})\n",
                    report.errors.len(),
                    if report.errors.len() == 1 { "" } else { "s" },
                    mode_name(args)
                ));
            }
        }
    }
    o
}

/// A violation's message without the `[rule; clause]` suffix that `Display` adds.
fn message(v: &Violation) -> String {
    let full = v.to_string();
    let suffix = format!(" [{}; {}]", v.rule.id(), v.rule.clause());
    full.strip_suffix(&suffix).map_or(full.clone(), str::to_string)
}

fn json(args: &ValidateArgs, outcome: &Outcome) -> String {
    let value = match outcome {
        Outcome::Decode(e) => json!({
            "file": args.file.display().to_string(),
            "mode": mode_name(args),
            "valid": false,
            "errors": [{
                "rule": DECODE_RULE,
                "clause": "docs/format.md § 4-6",
                "message": e.to_string(),
                "offset": e.offset(),
            }],
            "warnings": [],
            "truncated": false,
            "dtype": null,
            "shape": null,
            "mode_order": null,
            "nnz": null,
        }),
        Outcome::Checked(checked) => {
            let Checked { descriptor: d, report, offsets } = &**checked;
            json!({
            "file": args.file.display().to_string(),
            "mode": mode_name(args),
            "valid": report.is_valid(),
            "errors": report.errors.iter().zip(offsets).map(|(v, offset)| json!({
                "rule": v.rule.id(),
                "clause": v.rule.clause(),
                "message": message(v),
                "offset": offset,
                "level": v.level,
                "buffer": v.buffer,
                "index": v.index,
                "found": v.found,
                "expected": v.expected,
            })).collect::<Vec<_>>(),
            "warnings": report.warnings.iter().map(|w| json!({
                "rule": w.id(),
                "message": w.to_string(),
            })).collect::<Vec<_>>(),
            "truncated": report.truncated,
            "dtype": d.element_type.name(),
            "shape": d.shape.as_slice(),
            "mode_order": d.mode_order.as_slice(),
            "nnz": d.nnz,
            })
        }
    };
    format!("{value}\n")
}
