from reporting.ui.pages import observability

observability()
