package server

import "time"

// delayAnswer waits the case's answer delay (control.Arm.AnswerDelay)
// before a channel request is answered: the rig perturbs the server's timing
// with it, as a loaded sshd answers late. It returns at once when the case
// has no delay, and early when the case ends, so teardown never waits on it.
func (c *caseState) delayAnswer() {
	d := c.arm.AnswerDelay
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.ended:
	}
}
