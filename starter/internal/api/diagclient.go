package api

import (
	"context"
	"net/http"
	"time"
)

// maxRawAnswer bounds an answer read as bytes: above the bundle's own
// limit (diag.MaxBundleBytes, before compression).
const maxRawAnswer = 16 << 20

// diagnosticsTimeout bounds the bundle's collection and transfer.
const diagnosticsTimeout = 60 * time.Second

// Diagnostics fetches the running agent's diagnostics bundle (.tar.gz).
func (c *Client) Diagnostics(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, diagnosticsTimeout)
	defer cancel()
	var data []byte
	err := c.do(ctx, http.MethodGet, "/debug/diagnostics", nil, &data)
	return data, err
}
