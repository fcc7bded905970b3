package agent

import (
	"fmt"
	"testing"
)

// BenchmarkClassify prices the lane of one event as the WAL append finds
// it: the event's JSON decoded and two lanes' expressions tested (the
// default lane last, as most events go).
func BenchmarkClassify(b *testing.B) {
	qs := DefaultQueueSettings()
	qs.Lanes = []LaneSpec{
		{Name: "alarm", When: `level in ["error", "fatal"]`},
		{Name: "debug", When: `level == "debug"`, MinShare: 0.05},
		{Name: "default"},
	}
	d, err := newDrainPlan(qs)
	if err != nil {
		b.Fatal(err)
	}
	ev := []byte(fmt.Sprintf(`{"_file":"/var/log/app/app.log","_line":1234,"level":"info","payload":%q}`,
		"2026-12-07T19:00:00Z INFO request served path=/api/v1/items status=200 duration=12ms"))
	b.ReportAllocs()
	for b.Loop() {
		if d.classify(ev) != "" {
			b.Fatal("an info event left the default lane")
		}
	}
}
