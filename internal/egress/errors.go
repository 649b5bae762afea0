package egress

import "errors"

// ErrGrant marks an --allow-egress value that is not a grant.
var ErrGrant = errors.New("egress: invalid grant")
