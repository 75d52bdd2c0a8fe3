//! Reading the site's pages in its unit tests: the inner markup of
//! elements and the text a reader sees, so that a test says what a page
//! shows rather than writing its markup out again.

/// The inner markup of every `<tag ...>...</tag>` of `markup`, in order
/// (an element of the same tag nested in another is not told apart).
pub fn inner_of<'a>(markup: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag}");
    let close = format!("</{tag}>");
    let mut found = Vec::new();
    let mut rest = markup;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        // `<tr` must not match `<track`: the name ends the tag's word.
        if !after.starts_with(['>', ' ', '\n']) {
            rest = after;
            continue;
        }
        let Some(body) = after.find('>').map(|end| &after[end + 1..]) else {
            break;
        };
        let Some(end) = body.find(&close) else {
            break;
        };
        found.push(&body[..end]);
        rest = &body[end + close.len()..];
    }
    found
}

/// `markup` without its tags, its runs of white space as one space.
pub fn text_of(markup: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in markup.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn elements_and_texts_are_read_off_markup() {
    let page =
        "<tr class=\"x\"><td>a <b>b</b></td><td>c</td></tr><track></track><tr><td>d</td></tr>";
    let rows = inner_of(page, "tr");
    assert_eq!(rows.len(), 2);
    assert_eq!(inner_of(rows[0], "td"), ["a <b>b</b>", "c"]);
    assert_eq!(text_of(rows[0]), "a b c");
    assert_eq!(text_of(rows[1]), "d");
}
