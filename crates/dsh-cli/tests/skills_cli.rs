//! `dsh skills list` and the `skill` tool through the real binary, with the
//! working directory and `XDG_CONFIG_HOME` in a temp dir.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use dsh_testkit::cli::{outcome, Home};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// `dsh ARGS` in `cwd` with `home`'s environment.
async fn dsh(home: &Home, cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let mut c = home.tokio_dsh();
    c.current_dir(cwd).args(args);
    outcome(c).await.into_parts()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
}

#[tokio::test]
async fn skills_list_shows_each_skill_its_source_shadowing_and_warnings() {
    let home = Home::new(DSH);
    let p = home.path().join("project");
    std::fs::create_dir_all(p.join(".git")).unwrap();
    std::fs::create_dir_all(p.join("src")).unwrap();
    let user = home.path().join("config/dsh/skills");
    write(
        &p.join(".dsh/skills/deploy/SKILL.md"),
        &skill_md("deploy", "Ship a release.", "make ship"),
    );
    write(
        &p.join(".agents/skills/other/SKILL.md"),
        &skill_md("deploy", "The agents' deploy.", "b"),
    );
    write(
        &p.join(".agents/skills/lint/SKILL.md"),
        &skill_md("lint", &"long ".repeat(40), "b"),
    );
    write(
        &user.join("notes/SKILL.md"),
        &skill_md("notes", "Take \x1b[31mnotes\x1b[0m.", "b"),
    );
    write(&p.join(".dsh/skills/broken/SKILL.md"), "no front matter\n");

    // From a subdirectory: the project is the repository root.
    let (code, out, err) = dsh(&home, &p.join("src"), &["skills", "list"]).await;
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let dsh_dir = p.join(".dsh/skills");
    let agents_dir = p.join(".agents/skills");
    assert_eq!(
        lines[0],
        format!(
            "deploy\tproject .dsh/skills\t{}\tShip a release.",
            dsh_dir.join("deploy").display()
        )
    );
    let lint = lines[1];
    assert!(
        lint.starts_with(&format!(
            "lint\tproject .agents/skills\t{}\tlong long",
            agents_dir.join("lint").display()
        )),
        "{lint}"
    );
    assert!(lint.ends_with('…'), "the description is cut: {lint}");
    assert_eq!(
        lines[2],
        format!(
            "notes\tuser\t{}\tTake \\x1b[31mnotes\\x1b[0m.",
            user.join("notes").display()
        ),
        "escape sequences from files are shown, not sent"
    );
    assert!(lines[3].starts_with("shadowed"), "{out}");
    assert_eq!(
        lines[4],
        format!(
            "  deploy\tproject .agents/skills\t{}\tshadowed by {}",
            agents_dir.join("other").display(),
            dsh_dir.join("deploy").display()
        )
    );
    assert_eq!(lines[5], "warnings:");
    assert!(
        lines[6].starts_with(&format!(
            "  {}: no front matter",
            dsh_dir.join("broken/SKILL.md").display()
        )),
        "{out}"
    );
    assert_eq!(lines.len(), 7, "{out}");

    let (code, out, _) = dsh(&home, &p, &["skills", "list", "--json"]).await;
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = v["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["deploy", "lint", "notes"]);
    assert_eq!(v["skills"][0]["source"], "project-dsh");
    assert_eq!(v["skills"][2]["source"], "user");
    assert_eq!(
        v["skills"][1]["description"]
            .as_str()
            .unwrap()
            .chars()
            .count(),
        199,
        "under 500 characters: kept whole (trailing space trimmed)"
    );
    assert_eq!(
        v["shadowed"][0]["shadowed_by"],
        dsh_dir.join("deploy").display().to_string()
    );
    assert_eq!(v["warnings"].as_array().unwrap().len(), 1);
    assert_eq!(v["roots"].as_array().unwrap().len(), 3);

    // The agent gets them: a warning for the broken file, the tool works.
    let (code, out, err) = dsh(&home, &p, &["run", r#"call skill {"name": "deploy"}"#]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\n\nmake ship"), "{out}");
    assert!(
        err.contains("broken/SKILL.md: no front matter") && err.contains("dsh skills list"),
        "{err}"
    );
    let (_, out, _) = dsh(&home, &p, &["tools", "list", "--schemas"]).await;
    assert!(out.contains("\"name\": \"skill\""), "{out}");
}

#[tokio::test]
async fn without_skills_the_list_says_so_and_names_the_folders_searched() {
    let home = Home::new(DSH);
    let p = home.path().join("project");
    std::fs::create_dir_all(p.join(".git")).unwrap();
    let (code, out, err) = dsh(&home, &p, &["skills", "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("no skills found; searched:\n"), "{out}");
    for dir in [
        p.join(".dsh/skills"),
        p.join(".agents/skills"),
        home.path().join("config/dsh/skills"),
    ] {
        assert!(
            out.contains(&format!("\t{} (missing)\n", dir.display())),
            "{out}"
        );
    }
    let (_, out, _) = dsh(&home, &p, &["tools", "list", "--schemas"]).await;
    assert!(!out.contains("\"name\": \"skill\""), "{out}");
}
