from reporting.ui.pages import overview

overview()
