//! README.md shows examples/one_screen.rs as it is: cargo builds the file,
//! so the page cannot show code that does not compile.

#[test]
fn the_readme_shows_the_one_screen_example_verbatim() {
    let readme = include_str!("../README.md");
    let example = include_str!("../examples/one_screen.rs");
    let block = format!("```rust\n{example}```\n");
    assert!(
        readme.contains(&block),
        "README.md's \"A backend in one screen\" differs from examples/one_screen.rs: paste the file in again"
    );
}
