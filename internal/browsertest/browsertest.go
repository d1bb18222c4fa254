// Package browsertest starts the real headless Chromium that the browser
// tests (the console's pages, CORS from another origin) drive with
// chromedp. Without Chromium a test skips with a message, or fails when
// CI=true (internal/testenv.Missing): CI installs Debian's chromium.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentrt/agentrt/internal/testenv"
)

// Path is Chromium's executable: $AGENTRT_CHROMIUM, else chromium or
// chromium-browser on PATH.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("AGENTRT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "the browser tests need Chromium (apt-get install chromium, or set AGENTRT_CHROMIUM)")
	return ""
}

// New starts a headless Chromium for t, in a fresh profile, and returns
// the context of its first tab; cleanup closes the browser. The flags
// keep it off the network but for the pages the test opens: this
// machine refuses Chromium's background connections.
func New(t testing.TB) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Path(t)),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in CI; Chromium's sandbox refuses root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// Start the browser now, so that a broken install fails here.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// ScreenshotDir is where tests write their screenshots:
// $AGENTRT_SCREENSHOTS (CI keeps it), else a temporary directory.
func ScreenshotDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("AGENTRT_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// Screenshot saves the whole page of ctx's tab as name.png in
// ScreenshotDir.
func Screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	name = strings.ReplaceAll(name, "/", "-")
	if err := os.WriteFile(filepath.Join(ScreenshotDir(t), name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
