package consultation

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/consultmcp/consult/providers"
)

// Ledger records what consultations cost, in US dollars per UTC day, for a daily budget
// shared by every server that uses it. Implementations must be safe for concurrent use by
// several processes; an error is never reported as 0 spent. Every method that changes the
// ledger gives up when ctx ends (its lock is held elsewhere), with an error that says so.
type Ledger interface {
	// Spent is what was recorded for day's UTC date, and what calls in flight hold of it.
	Spent(day time.Time) (spent, held float64, err error)
	// AddSpend adds usd (0 or more) to day's UTC date and returns that day's new total.
	AddSpend(ctx context.Context, day time.Time, usd float64) (float64, error)
	// Reserve holds want dollars of day's budget for a call in flight when they fit what is
	// left of budget (spend and other holds taken off), else all that is left when that is
	// at least least, else nothing (ok false); the check and the hold are one atomic step
	// across every process sharing the ledger. granted is what is held under id until
	// Settle, or until expires (then it counts as spent in full); left is what was left.
	Reserve(ctx context.Context, day time.Time, budget, want, least float64, expires time.Time) (id string, granted, left float64, ok bool, err error)
	// Settle replaces hold id by what its call did cost.
	Settle(ctx context.Context, id string, usd float64) error
}

// Waits on the ledger's lock. A lock held elsewhere fails the call within its deadline.
const (
	// ledgerWaitMax bounds the wait for the ledger before a call is sent: a quarter of
	// what is left of the call's time, at most this.
	ledgerWaitMax = 2 * time.Second
	// settleWaitMin is the least wait to settle a call's hold after it ended, even past its
	// deadline (a timed-out call's tokens were billed too); a hold not settled counts in full
	// when it expires, settleGrace after the call's deadline.
	settleWaitMin = 250 * time.Millisecond
	settleGrace   = 2 * time.Minute
)

// NextUTCDay is when the daily budget of now's UTC day resets: the next midnight UTC.
func NextUTCDay(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// overBudget sizes the call's output limit to its max_cost_usd and to what is left of the
// server's daily budget, so that the most the call can cost fits both; it refuses, before
// anything is sent, a call whose prompt and least useful answer fit neither. Under a daily
// budget the bound is held in the ledger (c.hold) until the call settles it with its cost,
// so that calls in flight on every server sharing the ledger never pass the budget. A cap
// that cannot be checked (the model's price is unknown or bad data, the ledger cannot be
// used) refuses too: a cap is the caller's or the user's promise to themselves.
func (c *call) overBudget(ctx context.Context, rep *Report) (Result, bool) {
	est := c.estimate
	capUSD, budget := c.req.MaxCostUSD, c.svc.DailyBudgetUSD
	if capUSD <= 0 && budget <= 0 {
		return Result{}, false
	}
	info := ErrorInfo{Class: ClassOverBudget}
	unpriced := func(cause Cause) (Result, bool) {
		if c.badPrice != nil {
			cause = badPrice{Detail: c.badPrice.Error()}
		}
		return c.fail(info, cause, rep), true
	}
	if capUSD > 0 {
		info.MaxCostUSD = capUSD
		if !est.Known() {
			return unpriced(capUnpriced{})
		}
		if need, ok := c.capCost(capUSD, LimitMaxCost); !ok {
			info.NeedsUSD = &need
			return c.fail(info, overMaxCost{}, rep), true
		}
	}
	if budget <= 0 {
		return Result{}, false
	}
	now := time.Now()
	info.BudgetUSD, info.ResetsAt = budget, NextUTCDay(now)
	if c.svc.Ledger == nil {
		info.Class = ClassInternal
		return c.fail(info, ledgerUnreadable{Detail: "the server keeps no spend ledger (it has no results directory)"}, rep), true
	}
	spent, held, err := c.svc.Ledger.Spent(now)
	if err != nil {
		info.Class = ClassInternal
		return c.fail(info, ledgerUnreadable{Detail: err.Error()}, rep), true
	}
	if !est.Known() {
		left := math.Max(budget-spent-held, 0)
		info.BudgetLeftUSD = &left
		return unpriced(budgetUnpriced{})
	}
	pr := *c.price
	want, least := *est.MaxUSD, pr.Bound(est.BoundTokens, c.leastOutput(est.OutputLimit))
	expires := now.Add(24 * time.Hour)
	if dl, ok := ctx.Deadline(); ok {
		expires = dl.Add(settleGrace)
	}
	lctx, cancel := context.WithTimeout(ctx, min(ledgerWaitMax, budgetOf(ctx).left()/4))
	id, granted, left, ok, err := c.svc.Ledger.Reserve(lctx, now, budget, want, least, expires)
	cancel()
	if err != nil {
		info.Class = ClassInternal
		return c.fail(info, ledgerUnreadable{Detail: err.Error()}, rep), true
	}
	info.BudgetLeftUSD = &left
	if !ok {
		info.NeedsUSD = &least
		return c.fail(info, overBudget{Spent: spent}, rep), true
	}
	c.hold = id
	if granted < want {
		c.capCost(granted, LimitBudget) // granted >= least: it fits
	}
	return Result{}, false
}

// spendOf is what a model call cost: the provider's reported cost, else its reported usage at
// the model's prices, else (nothing reported, but the model produced something) its bound;
// 0 when nothing was generated or nothing is known.
func (c *call) spendOf(resp *providers.Response) float64 {
	if resp == nil {
		return 0
	}
	u := resp.Usage
	switch {
	case u.Reported && u.CostKnown:
		return u.CostUSD
	case u.Reported && c.answeredPrice(resp) != nil:
		return c.answeredPrice(resp).Cost(u)
	case !u.Reported && (resp.Text != "" || u.Reasoning > 0) && c.estimate.Known():
		return *c.estimate.MaxUSD // billed, but how much is unknown: the most it can be
	}
	return 0
}

// recordSpend settles the call's hold in the ledger with what the call cost (or adds the
// cost to it when the call holds nothing), and notes the prompt prefix as sent (for the next
// estimate's cache hit). It waits for the ledger at most what is left of the call's time,
// but at least settleWaitMin; a hold it cannot settle counts in full when it expires, and
// the result says so.
func (c *call) recordSpend(ctx context.Context, resp *providers.Response) {
	if resp != nil && (resp.Usage.Reported || resp.Text != "") {
		c.svc.sent.note(c.prefixKey(), time.Now())
	}
	c.settle(ctx, c.spendOf(resp))
}

// settle settles the call's hold with usd, or adds usd to the ledger when there is no hold.
func (c *call) settle(ctx context.Context, usd float64) {
	if c.svc.Ledger == nil || c.hold == "" && usd <= 0 {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(min(ledgerWaitMax, budgetOf(ctx).left()), settleWaitMin))
	defer cancel()
	var err error
	if id := c.hold; id != "" {
		c.hold = ""
		if err = c.svc.Ledger.Settle(sctx, id, usd); err != nil {
			c.req.Warnings = append(c.req.Warnings, fmt.Sprintf("this call's cost (%s) could not be recorded in the daily budget's ledger (%v); the %s it holds there counts as spent until it expires", FormatUSD(usd), err, FormatUSD(deref(c.estimate.MaxUSD))))
		}
	} else {
		_, err = c.svc.Ledger.AddSpend(sctx, time.Now(), usd)
	}
	if err != nil {
		c.svc.logger().Warn("could not record the consultation's cost", "usd", usd, "error", err)
	}
}

// announceEstimate puts the estimate in the next progress report, the first one the
// heartbeat sends after the price is known. It does not send a report of its own: one sent
// right after the call's first report can reach an HTTP client before it (mcp-go), and the
// first report must stay first (it carries the call's warnings).
func (c *call) announceEstimate() {
	if c.estimate == nil {
		return
	}
	note := c.estimate.figures()
	c.costNote.Store(&note)
}
