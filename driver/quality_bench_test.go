package driver_test

import (
	"fmt"
	"testing"

	"github.com/muster-run/muster"
)

// BenchmarkIntegrationVerify measures what gating merged trees costs on a
// real repository: 8 independent tasks on 2 command clones (shell
// scripts), one plan-wide gate, verify_integration on and off.
// Report: ms/task.
func BenchmarkIntegrationVerify(b *testing.B) {
	for _, verify := range []bool{true, false} {
		b.Run(fmt.Sprintf("verify=%v", verify), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				p := &muster.Plan{}
				for k := 0; k < 8; k++ {
					p.Tasks = append(p.Tasks, task(fmt.Sprintf("t%d", k), fmt.Sprintf("t%d.txt", k)))
				}
				e := newE2E(b, p, map[string]string{}, `echo x > "$MUSTER_TASK_ID.txt"`, "",
					muster.GateSpec{Name: "files", Command: "ls >/dev/null"})
				v := verify
				e.opts.Config.Run.VerifyIntegration = &v
				if st := e.run(b); st.RunState != muster.RunSucceeded {
					b.Fatalf("run %s", st.RunState)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*8), "ms/task")
		})
	}
}
