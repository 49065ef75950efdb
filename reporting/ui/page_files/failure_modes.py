from reporting.ui.pages import failure_modes

failure_modes()
