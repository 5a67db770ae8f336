package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
)

// Options configure the live view.
type Options struct {
	// Budget is the run's spend limit in micro-dollars, shown against the
	// spend in the header. 0 takes the budget from the run's RunStarted
	// config, if any.
	Budget int64
	// Now returns the current time (elapsed times); nil means time.Now.
	Now func() time.Time
	// Width and Height are the initial size, before the terminal reports
	// its own; 0 means 80 by 24.
	Width, Height int
	// OnInterrupt, if set, is called (once, from the view's goroutine)
	// when the user presses ctrl+c in a view started with Start or Run:
	// the caller stops the run there.
	OnInterrupt func()
	// Detached is the line written after the summary when the user
	// leaves the view with q: that the run goes on, and how to watch or
	// stop it. "" writes DetachedLine.
	Detached string
}

// DetachedLine is what q leaves on the terminal by default.
const DetachedLine = "left the live view: the run goes on; muster watch shows it again, Ctrl-C where it runs stops it"

// EventMsg carries one journal event into the model.
type EventMsg struct{ muster.Event }

// closedMsg says the event stream has ended.
type closedMsg struct{}

// tickMsg refreshes elapsed times once a second.
type tickMsg time.Time

// Model is the live view's Bubble Tea model: lanes of executor clones, the
// task list, the selected task's details and a tail of events, all folded
// from journal events sent as EventMsg.
type Model struct {
	st       *state
	now      func() time.Time
	width    int
	height   int
	selected int  // index into st.order
	detached bool // the user pressed q
	stopped  bool // the user pressed ctrl+c
	closed   bool // the event stream ended
	// stopsRun says ctrl+c stops the run (the view of muster run); in
	// muster watch it only leaves the view.
	stopsRun bool
}

// New returns a model with no events yet.
func New(opts Options) Model {
	m := Model{st: newState(), now: opts.Now, width: opts.Width, height: opts.Height, stopsRun: opts.OnInterrupt != nil}
	if m.now == nil {
		m.now = time.Now
	}
	if m.width <= 0 {
		m.width = 80
	}
	if m.height <= 0 {
		m.height = 24
	}
	m.st.budget = opts.Budget
	return m
}

// Init starts the clock that refreshes elapsed times.
func (m Model) Init() tea.Cmd { return tick() }

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update folds events, follows the terminal's size and handles keys:
// up/down (or k/j) select a task, home/end the first and last, q leaves
// the view, ctrl+c asks to stop the run.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case EventMsg:
		m.st.apply(msg.Event)
	case closedMsg:
		m.closed = true
		return m, tea.Quit
	case tickMsg:
		return m, tick()
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyPressMsg:
		switch msg.String() {
		case "q":
			m.detached = true
			return m, tea.Quit
		case "ctrl+c":
			m.stopped = true
			return m, tea.Quit
		case "up", "k":
			m.selected--
		case "down", "j":
			m.selected++
		case "pgup":
			m.selected -= 10
		case "pgdown":
			m.selected += 10
		case "home", "g":
			m.selected = 0
		case "end", "G":
			m.selected = len(m.st.Order) - 1
		}
		m.selected = max(0, min(m.selected, len(m.st.Order)-1))
	}
	return m, nil
}

// View draws the frame; see render.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "muster " + textsafe.Sanitize(m.st.ID)
	return v
}

// Detached reports whether the user left the view with q.
func (m Model) Detached() bool { return m.detached }

// Interrupted reports whether the user pressed ctrl+c.
func (m Model) Interrupted() bool { return m.stopped }

// Finished reports whether the run ended (RunFinished or RunInterrupted).
func (m Model) Finished() bool { return m.st.State != "" }

// Selected returns the ID of the selected task, or "".
func (m Model) Selected() muster.TaskID {
	if m.selected < len(m.st.Order) {
		return m.st.Order[m.selected]
	}
	return ""
}
