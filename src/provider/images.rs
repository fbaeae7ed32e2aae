//! Images in tool results, for providers whose tool results are text (OpenAI chat)
//! or that may not take images at all: an image the model cannot take is replaced
//! by a note in the text, never dropped silently.

use crate::message::Part;

/// One image of a tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ImageSource<'a> {
    /// Base64 bytes with their media type.
    Inline { media_type: &'a str, data: &'a str },
    /// A URL the provider fetches.
    Url(&'a str),
}

impl ImageSource<'_> {
    /// The image as a URL: itself, or a `data:` URL.
    pub(crate) fn to_url(self) -> String {
        match self {
            ImageSource::Inline { media_type, data } => format!("data:{media_type};base64,{data}"),
            ImageSource::Url(url) => url.to_owned(),
        }
    }
}

/// A tool result's content split for sending: the text (with a note for each image
/// or file that is left out) and the images that go.
pub(crate) struct SplitContent<'a> {
    pub(crate) text: String,
    pub(crate) images: Vec<ImageSource<'a>>,
}

/// The image types the OpenAI APIs take inline.
pub(crate) const OPENAI_IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Splits `content`. `image_input` says whether the model takes images at all;
/// inline images of a type outside `accepted` (when given) become notes too.
pub(crate) fn split<'a>(
    content: &'a [Part],
    model_name: &str,
    image_input: bool,
    accepted: Option<&[&str]>,
) -> SplitContent<'a> {
    let total = content.iter().filter(|p| matches!(p, Part::Image { .. })).count();
    let mut text = String::new();
    let mut notes = Vec::new();
    let mut images = Vec::new();
    let mut number = 0;
    for part in content {
        match part {
            Part::Text { text: piece, .. } => text.push_str(piece),
            Part::Image { media_type, data, url } => {
                number += 1;
                let source = match (data, url, media_type) {
                    (Some(data), None, Some(media_type)) => Some(ImageSource::Inline { media_type, data }),
                    (None, Some(url), _) => Some(ImageSource::Url(url)),
                    _ => None,
                };
                match source {
                    Some(ImageSource::Inline { media_type, .. })
                        if image_input && accepted.is_some_and(|types| !types.contains(&media_type)) =>
                    {
                        notes.push(format!(
                            "[image {number} of {total} not shown: media type {media_type} is not supported]"
                        ))
                    }
                    Some(source) if image_input => images.push(source),
                    Some(_) => notes.push(format!(
                        "[image {number} of {total} not shown: model \"{model_name}\" does not accept image input]"
                    )),
                    None => notes.push(format!("[image {number} of {total} not shown: it has no usable data or URL]")),
                }
            }
            Part::File { name, .. } => notes.push(format!(
                "[file {} not shown: tool results cannot carry files to this model]",
                name.as_deref().map(|n| format!("\"{n}\"")).unwrap_or_default()
            )),
            Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
        }
    }
    for note in notes {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&note);
    }
    SplitContent { text, images }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(media_type: &str) -> Part {
        Part::Image { media_type: Some(media_type.into()), data: Some("AAAA".into()), url: None }
    }

    #[test]
    fn images_go_when_the_model_takes_them() {
        let content = vec![Part::text("chart"), image("image/png")];
        let split = split(&content, "gpt-4o", true, Some(OPENAI_IMAGE_TYPES));
        assert_eq!(split.text, "chart");
        assert_eq!(split.images, vec![ImageSource::Inline { media_type: "image/png", data: "AAAA" }]);
        assert_eq!(split.images[0].to_url(), "data:image/png;base64,AAAA");
    }

    #[test]
    fn unsupported_media_types_become_notes() {
        let content = vec![image("image/bmp"), image("image/png")];
        let split = split(&content, "gpt-4o", true, Some(OPENAI_IMAGE_TYPES));
        assert_eq!(split.images.len(), 1);
        assert_eq!(split.text, "[image 1 of 2 not shown: media type image/bmp is not supported]");
    }

    #[test]
    fn images_a_model_cannot_take_become_notes() {
        let content = vec![Part::text("two charts"), image("image/png"), image("image/jpeg")];
        let split = split(&content, "glm-5.3", false, None);
        assert!(split.images.is_empty());
        assert_eq!(
            split.text,
            "two charts\n[image 1 of 2 not shown: model \"glm-5.3\" does not accept image input]\n[image 2 of 2 not shown: model \"glm-5.3\" does not accept image input]"
        );
    }
}
