// Package htmlreport renders a run's journal as one self-contained HTML
// page: the task graph (edges routed around the boxes they do not
// connect), a Gantt chart of every clone with gate, fix-round and review
// marks, cost charts and the task table. It folds events with package
// runview, escapes everything an agent wrote (html/template), loads
// nothing from the network, and is checked in headless Chromium.
package htmlreport
