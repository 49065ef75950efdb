from reporting.ui.pages import cases

cases()
