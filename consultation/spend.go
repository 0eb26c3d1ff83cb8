package consultation

import (
	"math"
	"time"

	"github.com/consultmcp/consult/providers"
)

// Ledger records what consultations cost, in US dollars per UTC day, for a daily budget
// shared by every server that uses it. Implementations must be safe for concurrent use by
// several processes; an error is never reported as 0 spent.
type Ledger interface {
	// Spent is what was recorded for day's UTC date.
	Spent(day time.Time) (float64, error)
	// AddSpend adds usd (0 or more) to day's UTC date and returns that day's new total.
	AddSpend(day time.Time, usd float64) (float64, error)
}

// NextUTCDay is when the daily budget of now's UTC day resets: the next midnight UTC.
func NextUTCDay(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// overBudget sizes the call's output limit to its max_cost_usd and to what is left of the
// server's daily budget, so that the most the call can cost fits both; it refuses, before
// anything is sent, a call whose prompt and least useful answer fit neither. A cap that
// cannot be checked (the model's price is unknown or bad data, the ledger cannot be read)
// refuses too: a cap is the caller's or the user's promise to themselves.
func (c *call) overBudget(rep *Report) (Result, bool) {
	est := c.estimate
	capUSD, budget := c.req.MaxCostUSD, c.svc.DailyBudgetUSD
	if capUSD <= 0 && (budget <= 0 || c.svc.Ledger == nil) {
		return Result{}, false
	}
	info := ErrorInfo{Class: ClassOverBudget}
	unpriced := func(reason Reason) (Result, bool) {
		f := Facts{Reason: reason}
		if c.badPrice != nil {
			f.Reason, f.Detail = ReasonBadPrice, c.badPrice.Error()
		}
		return c.fail(info, f, rep), true
	}
	if capUSD > 0 {
		info.MaxCostUSD = capUSD
		if !est.Known() {
			return unpriced(ReasonCapUnpriced)
		}
		if need, ok := c.capCost(capUSD, LimitMaxCost); !ok {
			info.NeedsUSD = &need
			return c.fail(info, Facts{Reason: ReasonOverMaxCost}, rep), true
		}
	}
	if budget <= 0 || c.svc.Ledger == nil {
		return Result{}, false
	}
	now := time.Now()
	info.BudgetUSD, info.ResetsAt = budget, NextUTCDay(now)
	spent, err := c.svc.Ledger.Spent(now)
	if err != nil {
		info.Class = ClassInternal
		return c.fail(info, Facts{Reason: ReasonLedgerUnreadable, Detail: err.Error()}, rep), true
	}
	left := math.Max(budget-spent, 0)
	info.BudgetLeftUSD = &left
	if !est.Known() {
		return unpriced(ReasonBudgetUnpriced)
	}
	if need, ok := c.capCost(left, LimitBudget); !ok {
		info.NeedsUSD = &need
		return c.fail(info, Facts{Reason: ReasonOverBudget, Spent: spent}, rep), true
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
	case u.Reported && c.price != nil:
		return c.price.Cost(u)
	case !u.Reported && (resp.Text != "" || u.Reasoning > 0) && c.estimate.Known():
		return *c.estimate.MaxUSD // billed, but how much is unknown: the most it can be
	}
	return 0
}

// recordSpend adds what the call cost to the ledger, and notes the prompt prefix as sent
// (for the next estimate's cache hit).
func (c *call) recordSpend(resp *providers.Response) {
	if resp != nil && (resp.Usage.Reported || resp.Text != "") {
		c.svc.sent.note(c.prefixKey(), time.Now())
	}
	usd := c.spendOf(resp)
	if c.svc.Ledger == nil || usd <= 0 {
		return
	}
	if _, err := c.svc.Ledger.AddSpend(time.Now(), usd); err != nil {
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
	note := c.estimate.String()
	c.costNote.Store(&note)
}
