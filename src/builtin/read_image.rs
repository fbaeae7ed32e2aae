//! read's images: PNG, JPEG, GIF and WebP, known by their first bytes. With the
//! `image-codecs` feature (the default) an image is decoded, and one larger than
//! 2,000 x 2,000 pixels or 4 MiB of base64 is resized or re-encoded to fit.
//! Without it (a smaller library, for hosts whose models read no large images) an
//! image goes out as it is when it fits 4 MiB of base64, and is refused otherwise.

use base64::Engine;

use crate::message::Part;
use crate::tool::ToolResult;

const MAX_IMAGE_BASE64: usize = 4 << 20;

/// An image format read recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ImageKind {
    Png,
    Jpeg,
    Gif,
    WebP,
}

impl ImageKind {
    /// The format a file's first bytes announce, if it is an image.
    pub(super) fn sniff(head: &[u8]) -> Option<Self> {
        match head {
            [0x89, b'P', b'N', b'G', ..] => Some(Self::Png),
            [0xFF, 0xD8, 0xFF, ..] => Some(Self::Jpeg),
            [b'G', b'I', b'F', b'8', ..] => Some(Self::Gif),
            [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some(Self::WebP),
            _ => None,
        }
    }

    fn media_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::WebP => "image/webp",
        }
    }
}

fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

/// The result: a line saying what the image is, then the image.
fn image_result(description: String, data: &[u8], media_type: &str) -> ToolResult {
    let encoded = base64::engine::general_purpose::STANDARD.encode(data);
    ToolResult {
        content: vec![
            Part::text(description),
            Part::Image { media_type: Some(media_type.to_owned()), data: Some(encoded), url: None },
        ],
        ..ToolResult::default()
    }
}

#[cfg(feature = "image-codecs")]
pub(super) use codecs::read_image;

/// The image as it is, when it fits; this build cannot scale one down.
#[cfg(not(feature = "image-codecs"))]
pub(super) fn read_image(bytes: Vec<u8>, shown: &str, kind: ImageKind) -> Result<ToolResult, String> {
    if base64_len(bytes.len()) > MAX_IMAGE_BASE64 {
        return Err(format!(
            "{shown} is an image of {} bytes, more than the {} MiB of base64 read sends as it is (this build reads images without decoding them); scale it down first (for example with bash).",
            bytes.len(),
            MAX_IMAGE_BASE64 >> 20
        ));
    }
    let media_type = kind.media_type();
    Ok(image_result(format!("Image {shown}: {media_type}, {} bytes", bytes.len()), &bytes, media_type))
}

#[cfg(feature = "image-codecs")]
mod codecs {
    use image::{DynamicImage, ImageFormat};

    use super::{base64_len, image_result, ImageKind, MAX_IMAGE_BASE64};
    use crate::tool::ToolResult;

    const MAX_IMAGE_SIDE: u32 = 2000;
    /// Images with more pixels are refused before they are decoded: decoded, this
    /// many take 128 MiB.
    const MAX_IMAGE_PIXELS: u64 = 32_000_000;
    /// The most memory one image decode may allocate.
    const MAX_IMAGE_ALLOCATION: u64 = 192 << 20;

    /// The image, resized or re-encoded when it does not fit 2,000 x 2,000
    /// pixels and 4 MiB of base64.
    pub(in super::super) fn read_image(bytes: Vec<u8>, shown: &str, kind: ImageKind) -> Result<ToolResult, String> {
        let format = match kind {
            ImageKind::Png => ImageFormat::Png,
            ImageKind::Jpeg => ImageFormat::Jpeg,
            ImageKind::Gif => ImageFormat::Gif,
            ImageKind::WebP => ImageFormat::WebP,
        };
        let unreadable = |e: image::ImageError| format!("{shown} is not a readable image: {e}");
        let mut reader = image::ImageReader::with_format(std::io::Cursor::new(&bytes), format);
        let mut limits = image::Limits::default();
        limits.max_alloc = Some(MAX_IMAGE_ALLOCATION);
        reader.limits(limits.clone());
        // The header alone gives the size; nothing larger is decoded.
        let (width, height) = reader.into_dimensions().map_err(unreadable)?;
        if u64::from(width) * u64::from(height) > MAX_IMAGE_PIXELS {
            return Err(format!(
                "{shown} is an image of {width}x{height} pixels, more than the {} million read decodes; scale it down first (for example with bash).",
                MAX_IMAGE_PIXELS / 1_000_000
            ));
        }
        let mut reader = image::ImageReader::with_format(std::io::Cursor::new(&bytes), format);
        reader.limits(limits);
        let image = reader.decode().map_err(unreadable)?;
        let original = kind.media_type();
        let fits = width <= MAX_IMAGE_SIDE && height <= MAX_IMAGE_SIDE && base64_len(bytes.len()) <= MAX_IMAGE_BASE64;
        if fits {
            return Ok(image_result(format!("Image {shown}: {width}x{height} {original}"), &bytes, original));
        }
        let resized = if width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE {
            image.resize(MAX_IMAGE_SIDE, MAX_IMAGE_SIDE, image::imageops::FilterType::Triangle)
        } else {
            image
        };
        let (data, media_type) = encode_within_budget(&resized)?;
        let description = format!(
            "Image {shown}: {width}x{height} {original}; sent as {}x{} {media_type} (was {width}x{height}, {} bytes)",
            resized.width(),
            resized.height(),
            bytes.len()
        );
        Ok(image_result(description, &data, media_type))
    }

    /// PNG if it fits the base64 budget, else JPEG at falling quality, then smaller.
    fn encode_within_budget(image: &DynamicImage) -> Result<(Vec<u8>, &'static str), String> {
        let mut png = Vec::new();
        image
            .write_to(&mut std::io::Cursor::new(&mut png), ImageFormat::Png)
            .map_err(|e| format!("The image could not be re-encoded: {e}"))?;
        if base64_len(png.len()) <= MAX_IMAGE_BASE64 {
            return Ok((png, "image/png"));
        }
        let mut current = DynamicImage::ImageRgb8(image.to_rgb8());
        loop {
            for quality in [85u8, 70, 50] {
                let mut jpeg = Vec::new();
                let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, quality);
                current.write_with_encoder(encoder).map_err(|e| format!("The image could not be re-encoded: {e}"))?;
                if base64_len(jpeg.len()) <= MAX_IMAGE_BASE64 {
                    return Ok((jpeg, "image/jpeg"));
                }
            }
            current = current.resize(
                current.width() * 3 / 4,
                current.height() * 3 / 4,
                image::imageops::FilterType::Triangle,
            );
        }
    }
}

#[cfg(all(test, not(feature = "image-codecs")))]
mod tests {
    use super::*;

    #[test]
    fn an_image_that_fits_goes_out_as_it_is() {
        let bytes = b"\x89PNG\r\n\x1a\nnot decoded here".to_vec();
        let kind = ImageKind::sniff(&bytes).unwrap();
        let result = read_image(bytes.clone(), "pic.png", kind).unwrap();
        let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
        assert_eq!(
            result.content,
            vec![
                Part::text(format!("Image pic.png: image/png, {} bytes", bytes.len())),
                Part::Image { media_type: Some("image/png".to_owned()), data: Some(encoded), url: None },
            ]
        );
    }

    #[test]
    fn an_image_is_sent_up_to_four_mib_of_base64_and_refused_past_it() {
        let mut bytes = vec![0xFF, 0xD8, 0xFF];
        bytes.resize(MAX_IMAGE_BASE64 / 4 * 3, 0);
        let result = read_image(bytes.clone(), "big.jpg", ImageKind::Jpeg).unwrap();
        assert_eq!(result.content[0], Part::text("Image big.jpg: image/jpeg, 3145728 bytes"));
        bytes.push(0);
        let error = read_image(bytes, "big.jpg", ImageKind::Jpeg).unwrap_err();
        assert!(error.contains("big.jpg is an image of 3145729 bytes"), "{error}");
        assert!(error.contains("scale it down first"), "{error}");
    }
}
