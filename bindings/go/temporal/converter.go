package ferruletemporal

import "go.temporal.io/sdk/converter"

// DataConverter is Temporal's default data converter with every payload
// compressed (zlib): a run's state, which carries its whole transcript, is
// text that compresses several times over, which keeps it further from
// Temporal's payload limit. Give it to every client and worker of a task
// queue alike (client.Options.DataConverter), and to a replayer.
func DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
		converter.NewZlibCodec(converter.ZlibCodecOptions{AlwaysEncode: true}))
}
