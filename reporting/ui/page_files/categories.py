from reporting.ui.pages import categories

categories()
