package pin

import "flag"

// Flags registers wrap's --pins on fs and returns its value.
func Flags(fs *flag.FlagSet) *string {
	return fs.String("pins", "", "the pin file of the server's tool definitions (default: NAME.pins.json in the state folder)")
}
