//! The newcomer's path: every command of the guide's getting-started
//! chapter (`docs/src/getting-started.md`, its ```` ```sh ```` blocks) runs
//! as written from the repository root and succeeds, and where the chapter
//! shows the output (a ```` ```text ```` block right after the command's
//! block) the lines shown appear in that order in what the command prints
//! (`…` stands for lines left out).
//!
//! `cargo run --release -- ARGS` runs the `cenic` binary cargo built for this
//! test (the same release build `cargo run --release` makes); running cargo
//! inside the test suite would rebuild and lock the target directory it is
//! running from. `scripts/test_all.sh` is the test suite itself (CI runs it
//! through `.ci/run`), so it is recognised and not run from inside it.

use std::path::Path;
use std::process::Command;

/// One runnable line of a ```sh block, with the output block shown after it.
struct Step {
    line: usize,
    command: String,
    shown: Option<Vec<String>>,
}

/// The ```sh blocks' commands (comments stripped), in order; each block's
/// last command gets the ```text block that follows the block, if any.
fn steps(text: &str) -> Vec<Step> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<Step> = vec![];
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim();
        if fence == "```sh" || fence == "```text" {
            let start = i;
            let mut body = vec![];
            i += 1;
            while i < lines.len() && lines[i].trim() != "```" {
                body.push(lines[i]);
                i += 1;
            }
            if fence == "```sh" {
                for (k, l) in body.iter().enumerate() {
                    let cmd = l.split(" #").next().unwrap().trim();
                    if !cmd.is_empty() && !cmd.starts_with('#') {
                        out.push(Step { line: start + 2 + k, command: cmd.to_string(), shown: None });
                    }
                }
            } else if let Some(last) = out.last_mut() {
                // An output block belongs to the command block right before it (blank lines between).
                let prev = lines[..start].iter().rposition(|l| !l.trim().is_empty());
                if prev.is_some_and(|p| lines[p].trim() == "```") && last.line < start && last.shown.is_none() {
                    last.shown = Some(body.iter().map(|s| s.to_string()).collect());
                }
            }
        }
        i += 1;
    }
    out
}

#[test]
fn getting_started_commands_run_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let chapter = root.join("docs/src/getting-started.md");
    let text = std::fs::read_to_string(&chapter).expect("docs/src/getting-started.md");
    let steps = steps(&text);
    assert!(steps.len() >= 4, "too few commands found in {}", chapter.display());
    // `cargo run` writes into target/ (the default target directory); the
    // commands' outputs go there too, so it exists for them as for a newcomer.
    std::fs::create_dir_all(root.join("target")).unwrap();
    let mut ran = 0;
    for s in &steps {
        let args: Vec<&str> = s.command.split_whitespace().collect();
        let (program, rest) = match args.as_slice() {
            ["cargo", "run", "--release", "--", rest @ ..] => (env!("CARGO_BIN_EXE_cenic"), rest),
            ["scripts/test_all.sh"] => continue,
            _ => panic!(
                "getting-started.md:{}: `{}` is not a command this test knows how to run; teach it",
                s.line, s.command
            ),
        };
        let out = Command::new(program).args(rest).current_dir(root).output().expect("cenic runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "getting-started.md:{}: `{}` failed:\n{stdout}\n{}",
            s.line,
            s.command,
            String::from_utf8_lossy(&out.stderr)
        );
        if let Some(shown) = &s.shown {
            let printed: Vec<&str> = stdout.lines().map(str::trim_end).collect();
            let mut at = 0;
            for want in shown.iter().map(|l| l.trim_end()).filter(|l| *l != "…") {
                match printed[at..].iter().position(|p| *p == want) {
                    Some(k) => at += k + 1,
                    None => panic!(
                        "getting-started.md:{}: `{}` did not print the line shown in the guide\n  {want}\nafter what \
                         matched so far; it printed:\n{stdout}",
                        s.line, s.command
                    ),
                }
            }
        }
        ran += 1;
    }
    assert!(ran >= 4, "only {ran} commands ran");
    assert!(root.join("target/replay.html").is_file(), "the replay page was not written");
}
