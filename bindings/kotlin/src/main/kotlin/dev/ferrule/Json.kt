package dev.ferrule

import kotlinx.serialization.json.Json

/** The package's one JSON configuration: nulls and defaults left out, unknown keys ignored when reading. */
internal val FerruleJson = Json {
    ignoreUnknownKeys = true
    explicitNulls = false
    encodeDefaults = false
}
