//! The importers as a mail reaches them: the input is quoted (`> `) and
//! its long lines broken at the last space before column 72, as a mail
//! client does, so that unquoting and the joining of broken lines see
//! mail-shaped text rather than only the rare bytes that look like it.
#![no_main]

use archive::import::{ImportOptions, parse};
use libfuzzer_sys::fuzz_target;

/// `text` as a mail client quoting it would send it.
fn as_mail(text: &str, quotes: usize) -> String {
    let prefix = "> ".repeat(quotes);
    let mut mail = String::from("On Monday someone wrote:\n");
    for line in text.lines() {
        let mut rest = line;
        loop {
            let width = 72usize.saturating_sub(prefix.len()).max(8);
            if rest.len() <= width {
                break;
            }
            let cut = rest
                .char_indices()
                .take_while(|(idx, _)| *idx < width)
                .filter(|(_, c)| *c == ' ')
                .map(|(idx, _)| idx)
                .last();
            let Some(cut) = cut.filter(|cut| *cut > 0) else {
                break;
            };
            mail.push_str(&prefix);
            mail.push_str(&rest[..cut]);
            mail.push('\n');
            rest = &rest[cut + 1..];
        }
        mail.push_str(&prefix);
        mail.push_str(rest);
        mail.push('\n');
    }
    mail
}

fuzz_target!(|data: &[u8]| {
    let Some((&quotes, body)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(body);
    let mail = as_mail(&text, usize::from(quotes % 3));
    let _ = parse(mail.as_bytes(), &ImportOptions::default());
});
