package segment

import (
	"io"

	"github.com/klauspost/compress/zstd"
)

// zstd settings of sealed segments. They are not part of the format (verify
// reads any zstd stream, whatever made it); they are the cost model: one
// encoder goroutine beside the relay, a window that bounds its memory, the
// default level (the records' digests and signatures are random bytes,
// which no level compresses; the JSON around them compresses at any).
const (
	ZstdWindow = 1 << 20
	// zstdMaxWindow bounds what a reader accepts from a segment (zstd
	// --long=27 and below), so that a hostile file cannot claim gigabytes.
	zstdMaxWindow = 1 << 27
)

// NewZstdReader decodes a zstd stream with bounded memory; workers > 1
// decodes ahead in the background.
func NewZstdReader(r io.Reader, workers int) (*zstd.Decoder, error) {
	return zstd.NewReader(r, zstd.WithDecoderConcurrency(workers), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderMaxMemory(1<<30))
}
